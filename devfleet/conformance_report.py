"""What a conformance run measured: the JUnit report ginkgo wrote, read into honest counts.

Ginkgo's `--ginkgo.junit-report` file has one `<testcase>` per spec with a `status`
attribute (passed, failed, skipped, pending, panicked, timedout, interrupted, aborted) and
one per suite node (`[BeforeSuite]`, `[SynchronizedAfterSuite]`, `[ReportAfterSuite] …`).
Specs are counted; suite nodes are listed apart, because a failing `[BeforeSuite]` (say,
a readiness check) leaves every spec skipped and the numbers alone would hide why.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

FAILED_STATUSES = frozenset({"failed", "panicked", "timedout", "interrupted", "aborted"})
SKIPPED_STATUSES = frozenset({"skipped", "pending"})
SUITE_NODE_PREFIXES = (
    "[BeforeSuite]",
    "[AfterSuite]",
    "[SynchronizedBeforeSuite]",
    "[SynchronizedAfterSuite]",
    "[ReportBeforeSuite]",
    "[ReportAfterSuite]",
    "[DeferCleanup (Suite)]",
)


@dataclass(frozen=True, slots=True)
class FailedSpec:
    name: str
    status: str
    message: str
    """The first line of the failure, where the report carries one."""


@dataclass(slots=True)
class SuiteSummary:
    passed: list[str] = field(default_factory=list)
    failed: list[FailedSpec] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed_suite_nodes: list[FailedSpec] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.passed) + len(self.failed) + len(self.skipped)

    def line(self) -> str:
        return f"{len(self.passed)} passed, {len(self.failed)} failed, {len(self.skipped)} skipped"


GENERIC_LINE = re.compile(
    r"^(Expected( success, but got an error:)?|The function passed to Eventually failed at .*"
    r"|In \[It\] at: .*|<[^>]*>(:.*)?|\{|to (be|equal|have|contain).*)$"
)
"""Gomega's scaffolding around the line that says what went wrong."""


def _first_line(case: ElementTree.Element) -> str:
    """The failure's headline, with the first telling line after it when there is one:
    "Timed out after 10.001s. — workloads.kueue.x-k8s.io "x" not found"."""
    for tag in ("failure", "error"):
        child = case.find(tag)
        if child is None:
            continue
        text = (child.get("message") or child.text or "").strip()
        lines = []
        for raw in text.splitlines():
            # Ginkgo writes "[FAILED] <what>", then the location (…/x_test.go:120).
            line = re.sub(r"^\[[A-Z]+\]\s*", "", raw.strip())
            if line and not re.search(r"\.go:\d+$", line):
                lines.append(line)
        if not lines:
            return ""
        head = lines[0]
        detail = next((line for line in lines[1:] if not GENERIC_LINE.match(line)), "")
        if GENERIC_LINE.match(head) and detail:
            return detail[:300]
        return (f"{head} — {detail}" if detail and head.startswith("Timed out") else head)[:300]
    return ""


def summarize(junit_xml: str) -> SuiteSummary:
    """Counts and names from the text of a ginkgo JUnit report."""
    root = ElementTree.fromstring(junit_xml)
    summary = SuiteSummary()
    for case in root.iter("testcase"):
        name = case.get("name", "")
        status = case.get("status") or _status_from_children(case)
        if name.startswith(SUITE_NODE_PREFIXES):
            if status in FAILED_STATUSES:
                summary.failed_suite_nodes.append(FailedSpec(name, status, _first_line(case)))
            continue
        if status in FAILED_STATUSES:
            summary.failed.append(FailedSpec(name, status, _first_line(case)))
        elif status in SKIPPED_STATUSES:
            summary.skipped.append(name)
        else:
            summary.passed.append(name)
    return summary


def _status_from_children(case: ElementTree.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    if case.find("skipped") is not None:
        return "skipped"
    return "passed"


def summarize_file(path: Path) -> SuiteSummary:
    return summarize(path.read_text())
