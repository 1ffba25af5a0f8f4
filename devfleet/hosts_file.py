"""Control-plane names in /etc/hosts, as one marked block that is rewritten, never appended.

Upstream's MultiKueue suites name worker apiservers `<cluster>-control-plane` (kind's
node containers, resolved by docker's DNS). A local fleet makes those names resolve to
the loopback addresses its relays listen on (devfleet.kind_names) through the hosts file,
which every resolver on the machine reads (the hub's aiohttp resolves with getaddrinfo),
so fleetq's own worker connection needs no resolution override. The block is fleetq's
alone: writing it again with the same entries changes nothing, other lines are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

HOSTS_FILE = Path("/etc/hosts")
BEGIN = "# BEGIN fleetq conformance control-plane names (devfleet/hosts_file.py)"
END = "# END fleetq conformance control-plane names"


class HostsFileError(RuntimeError):
    """The hosts file could not be updated; the message says which lines to add by hand."""


def with_block(text: str, entries: Mapping[str, str]) -> str:
    """`text` with fleetq's block replaced by `entries` (name -> address), or added at the
    end when absent; an empty mapping removes the block (pure)."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines():
        if line == BEGIN:
            inside = True
        elif line == END:
            inside = False
        elif not inside:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    if entries:
        if kept:
            kept.append("")
        kept += [BEGIN, *(f"{address} {name}" for name, address in sorted(entries.items())), END]
    return "\n".join(kept) + "\n" if kept else ""


def ensure_entries(entries: Mapping[str, str], path: Path = HOSTS_FILE) -> bool:
    """Make the block hold `entries`; True when the file changed. Written in place (the
    hosts file may be a bind mount, which a rename would not replace)."""
    current = path.read_text() if path.exists() else ""
    wanted = with_block(current, entries)
    if wanted == current:
        return False
    try:
        path.write_text(wanted)
    except OSError as error:
        lines = "\n".join(f"  {address} {name}" for name, address in sorted(entries.items()))
        raise HostsFileError(
            f"cannot write {path} ({error}); add these lines as root, then run again:\n{lines}"
        ) from error
    return True
