"""Which cohorts a queue-status flush looks at: only those above the ClusterQueues that moved."""

from __future__ import annotations

from core.manager.queue_status import cohorts_above

PARENTS = {"team-a": "org", "team-b": "org", "org": "", "lab": "", "loop-1": "loop-2"}
PARENTS["loop-2"] = "loop-1"
COHORT_OF = {"cq-a": "team-a", "cq-b": "team-b", "cq-lab": "lab", "cq-alone": "", "cq-x": "loop-1"}


def lineage(name: str) -> list[str]:
    out: list[str] = []
    while name and name not in out:
        out.append(name)
        name = PARENTS.get(name, "")
    return out


def test_a_change_in_one_queue_touches_its_cohort_and_those_above_only() -> None:
    assert cohorts_above(["cq-a"], COHORT_OF.__getitem__, lineage) == {"team-a", "org"}
    assert cohorts_above(["cq-a", "cq-b"], COHORT_OF.__getitem__, lineage) == {
        "team-a",
        "team-b",
        "org",
    }
    assert cohorts_above(["cq-lab"], COHORT_OF.__getitem__, lineage) == {"lab"}


def test_a_queue_without_a_cohort_touches_none_and_a_cycle_ends() -> None:
    assert cohorts_above(["cq-alone"], COHORT_OF.__getitem__, lineage) == set()
    assert cohorts_above([], COHORT_OF.__getitem__, lineage) == set()
    assert cohorts_above(["cq-x"], COHORT_OF.__getitem__, lineage) == {"loop-1", "loop-2"}
