"""WorkloadPriorityClasses a test needs for a while: created, then removed again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from tests.builders import WorkloadPriorityClass

KUEUE = ("kueue.x-k8s.io", "v1beta2")


@contextlib.contextmanager
def workload_priority_classes(custom: Any, classes: Mapping[str, int]) -> Iterator[None]:
    """Create each class (name → value) through `custom` (a CustomObjectsApi); delete them
    on the way out, whatever happened."""
    for name, value in classes.items():
        custom.create_cluster_custom_object(
            *KUEUE, "workloadpriorityclasses", WorkloadPriorityClass(name, value).obj()
        )
    try:
        yield
    finally:
        for name in classes:
            with contextlib.suppress(Exception):
                custom.delete_cluster_custom_object(*KUEUE, "workloadpriorityclasses", name)
