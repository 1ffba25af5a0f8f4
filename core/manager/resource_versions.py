"""Ordering resourceVersions, for versions that reach the hub by more than one path.

Kubernetes calls resourceVersions opaque, yet every apiserver backed by etcd hands out
the etcd revision, a decimal integer that only grows. The hub relies on that ordering in
one place only: to tell whether a Workload read out of band (a write's response, a
re-read after a conflict, the list taken on becoming leader) is newer than a version its
informer delivers later. When a version is not an integer the rule degrades safely:
any different version counts as newer, so the engine follows the latest event it saw.
"""

from __future__ import annotations


def is_newer(candidate: str, than: str) -> bool:
    """Whether resourceVersion `candidate` is later than `than` ('' is older than all)."""
    if not than:
        return bool(candidate)
    if not candidate:
        return False
    if candidate.isdigit() and than.isdigit():
        return int(candidate) > int(than)
    return candidate != than
