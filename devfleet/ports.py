"""Loopback ports for the fleet's components, chosen by us rather than by kwokctl.

kwokctl picks "unused" ports by walking down from 32767 in each process, so clusters
created in parallel (or two fleets started at once) all pick the same ports and collide.
We hand every component an explicit port instead: random, below the kernel's ephemeral
range (so outgoing connections never take it first), free at the time of choosing, and
never handed out twice by this process.
"""

from __future__ import annotations

import random
import socket
import threading

_LOW, _HIGH = 20000, 32000
_given: set[int] = set()
_lock = threading.Lock()


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def allocate_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """`count` distinct free loopback ports."""
    chooser = rng or random.SystemRandom()
    chosen: list[int] = []
    with _lock:
        for _ in range(count * 200):
            if len(chosen) == count:
                break
            port = chooser.randrange(_LOW, _HIGH)
            if port in _given or not _free(port):
                continue
            _given.add(port)
            chosen.append(port)
    if len(chosen) < count:
        raise RuntimeError(f"could not find {count} free loopback ports in {_LOW}-{_HIGH}")
    return chosen
