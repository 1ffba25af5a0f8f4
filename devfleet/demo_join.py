"""Join the demo's workers exactly as a user would: `fleetq join -f clusters.example.yaml`.

The file names the demo fleet's kubeconfigs under the default state folder. When the fleet
lives elsewhere (FLEETQ_HOME, as in tests), the same file is used with each cluster's
kubeconfig pointed at where the fleet really wrote it; nothing else changes.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from cli.join.fleet_file import FleetFile, load_fleet_file
from cli.join.join_report import JoinEvent, JoinReport, Notice, NoticeLevel
from cli.join.join_run import JoinOptions, run_join
from devfleet.cluster_access import RunningFleet
from devfleet.toolchain import REPO_ROOT

Progress = Callable[[str], None]
FLEET_FILE = REPO_ROOT / "clusters.example.yaml"


class DemoJoinError(RuntimeError):
    """join reported errors; the message lists them."""


def fleet_file_for(fleet: RunningFleet, path: Path = FLEET_FILE) -> FleetFile:
    """`path` as written, its kubeconfigs replaced by the running fleet's."""
    loaded = load_fleet_file(path)
    manager = dataclasses.replace(
        loaded.manager,
        cluster=dataclasses.replace(loaded.manager.cluster, kubeconfig=fleet.manager.kubeconfig),
    )
    workers = tuple(
        dataclasses.replace(
            worker,
            cluster=dataclasses.replace(
                worker.cluster, kubeconfig=fleet.cluster(worker.name).kubeconfig
            ),
        )
        for worker in loaded.workers
    )
    return dataclasses.replace(loaded, manager=manager, workers=workers)


def join_demo_workers(fleet: RunningFleet, progress: Progress) -> JoinReport:
    """Run join in process; one line per cluster of what it did, warnings as they come."""
    fleet_file = fleet_file_for(fleet)

    def show(event: JoinEvent) -> None:
        if isinstance(event, Notice) and event.level is not NoticeLevel.INFO:
            progress(f"  join {event.level.value}: {event.text}")

    report = run_join(fleet_file, JoinOptions(), progress=show)
    if not report.ok:
        raise DemoJoinError("fleetq join failed: " + "; ".join(n.text for n in report.errors))
    for cluster in ("manager", *(w.name for w in fleet_file.workers)):
        outcomes: Counter[str] = Counter(
            result.outcome.value for result in report.objects if result.cluster == cluster
        )
        done = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))
        progress(f"  {cluster}: {done or 'nothing to do'}")
    for token in report.tokens:
        expiry = token.expires_at.strftime("%Y-%m-%d %H:%M UTC") if token.expires_at else "?"
        progress(f"  {token.worker}: token {token.action.value}, expires {expiry}")
    return report
