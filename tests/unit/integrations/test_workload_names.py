"""Workload names: upstream's recipe, stable for a Job, new for a recreated one, short."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrations.batch_job.kind import BATCH_JOB
from integrations.framework.workload_builder import workload_name
from integrations.framework.workload_names import (
    LONG_MAX_WORKLOAD_NAME_LENGTH,
    workload_name_for_owner,
)

LONG = (
    "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-"
    "department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-"
    "engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-dept"
)


@pytest.mark.parametrize(
    ("name", "extra", "max_length", "expected"),
    [
        # Vectors from upstream's own tests: fleetq must name Workloads exactly alike.
        ("name", "", 63, "job-name-ef3a1"),
        ("name", "1", 63, "job-name-2514c"),
        (LONG, "", 63, "job-marketing-campaign-autumn-2024-region-north-america-d-218b8"),
        (LONG, "", LONG_MAX_WORKLOAD_NAME_LENGTH, f"job-{LONG[:243]}-218b8"),
    ],
)
def test_names_match_upstream(name: str, extra: str, max_length: int, expected: str) -> None:
    got = workload_name_for_owner(
        owner_name=name,
        owner_uid="uid",
        owner_kind="Job",
        owner_group="batch",
        extra=extra,
        max_length=max_length,
    )
    assert got == expected


@given(name=st.from_regex(r"[a-z0-9]([-a-z0-9]{0,250}[a-z0-9])?", fullmatch=True))
def test_names_fit_in_a_label_value(name: str) -> None:
    job = {"metadata": {"name": name, "uid": "0b7c"}}
    got = workload_name(BATCH_JOB, job)
    assert len(got) <= 63
    assert re.fullmatch(r"job-.*-[0-9a-f]{5}", got)


def test_the_same_job_always_gets_the_same_name() -> None:
    job = {"metadata": {"name": "train", "uid": "u-1"}}
    assert workload_name(BATCH_JOB, job) == workload_name(BATCH_JOB, dict(job))


def test_a_recreated_job_with_the_same_name_gets_another_workload() -> None:
    first = workload_name(BATCH_JOB, {"metadata": {"name": "train", "uid": "u-1"}})
    second = workload_name(BATCH_JOB, {"metadata": {"name": "train", "uid": "u-2"}})
    assert first != second
    assert first[:-5] == second[:-5] == "job-train-"
