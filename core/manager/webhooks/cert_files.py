"""The serving certificate as files in the webhook cert dir (`tls.crt`, `tls.key`, `ca.crt`).

Mounted Secrets use these names, and so does the hub when it manages certificates itself
(anything else reading the dir — a sidecar, an operator debugging TLS — sees the same
layout). Each file is replaced atomically (write a sibling, rename over), keys readable by
the owner only; a reader can still catch the new certificate with the old key between two
renames, which `ServingCertificate` rejects as a mismatched pair and retries later.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Final

from core.manager.webhook_certs import CA_CERT_KEY, TLS_CERT_KEY, TLS_KEY_KEY, CertBundle

CERT_FILE: Final = TLS_CERT_KEY
KEY_FILE: Final = TLS_KEY_KEY
CA_FILE: Final = CA_CERT_KEY


def cert_file(directory: Path) -> Path:
    return directory / CERT_FILE


def key_file(directory: Path) -> Path:
    return directory / KEY_FILE


def _replace(path: Path, data: bytes, mode: int) -> bool:
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return True


def write_cert_dir(directory: Path, bundle: CertBundle) -> bool:
    """Write the serving pair and the CA; True when any file changed."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = _replace(key_file(directory), bundle.tls_key, 0o600)
    changed |= _replace(cert_file(directory), bundle.tls_cert, 0o644)
    changed |= _replace(directory / CA_FILE, bundle.ca_cert, 0o644)
    return changed
