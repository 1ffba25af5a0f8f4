"""The hub's memory with many pending workloads: RSS at 0 … 100,000 pending Workloads.

One lite cluster (etcd + kube-apiserver, tuned as the scheduler benchmark's), fleetq's CRDs,
a ClusterQueue with no quota (so every Workload stays pending: an honest worst case, each
one cached, queued and carrying its pending condition), and `fleetq hub` with a client
budget high enough that its status writes do not lag far behind. Workloads are created
in steps; after each step the benchmark waits until the hub counts them all pending
(`kueue_pending_workloads`) and its resident memory holds still, then reads it (VmRSS)
and its peak (VmHWM). The slope between steps is the cost of one pending workload.

Beside it, the bytes one cached Workload takes in the hub's informer as the hub keeps it
(a decoded JSON dict, `managedFields` dropped): measured with tracemalloc on Workloads
listed back from the apiserver, so it is the real object, not a model of it.

    python -m bench.memory                       # 100,000 pending, steps 10k/30k/100k
    python -m bench.memory --workloads 20000     # a quick look

Upstream's minimalkueue is not run beside it: its client is fixed at 50 QPS, so its
100,000 pending-condition writes alone would take over half an hour.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import json
import os
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.scheduler.crd_install import install_crds
from bench.scheduler.managers import (
    ManagerKind,
    check_prerequisites,
    http_get,
    prepare_launch,
    wait_ready,
)
from bench.scheduler.measured_process import MeasuredProcess
from bench.scheduler.tuned_cluster import ApiserverTuning, BenchCluster
from core.api.registry import kind_info
from core.kube.body_codec import decode_body
from core.kube.client import KubeClient
from core.kube.informer import drop_managed_fields
from core.kube.resources import NAMESPACES

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
NAMESPACE = "bench-pending"
QUEUE = "pending-lq"
CLUSTER_QUEUE = "pending-cq"
HUB_QPS = 2000
CREATE_CONCURRENCY = 48

Progress = Callable[[str], None]


@dataclass
class Step:
    workloads: int
    pending_seen: int
    rss_mib: float
    peak_rss_mib: float
    hub_cpu_s: float
    seconds_to_settle: float


@dataclass
class MemoryResult:
    started: str
    workloads: int
    load_average_at_start: tuple[float, float, float]
    steps: list[Step] = field(default_factory=list)
    bytes_per_cached_workload: float | None = None
    sample_workload_json_bytes: float | None = None
    error: str | None = None

    def bytes_per_pending(self) -> float | None:
        """The RSS slope from the first to the last step."""
        if len(self.steps) < 2:
            return None
        first, last = self.steps[0], self.steps[-1]
        added = last.workloads - first.workloads
        return None if added <= 0 else (last.rss_mib - first.rss_mib) * 2**20 / added


def _manifest(index: int) -> dict[str, Any]:
    """A Workload as a batch Job's would be: one pod set, one container, CPU and memory."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": f"pending-{index:06d}", "namespace": NAMESPACE},
        "spec": {
            "queueName": QUEUE,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "registry.invalid/sleep",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                                }
                            ],
                        }
                    },
                }
            ],
        },
    }


def _queue_manifests() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        (
            "ResourceFlavor",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "default"},
            },
        ),
        (
            "ClusterQueue",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": CLUSTER_QUEUE},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": "default",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "0"},
                                        {"name": "memory", "nominalQuota": "0"},
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
        ),
        (
            "LocalQueue",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": QUEUE, "namespace": NAMESPACE},
                "spec": {"clusterQueue": CLUSTER_QUEUE},
            },
        ),
    ]


async def _create_queues(client: KubeClient) -> None:
    for kind, manifest in _queue_manifests():
        namespace = manifest["metadata"].get("namespace")
        resource = NAMESPACES if kind == "Namespace" else kind_info(kind)
        await client.create(resource, manifest, namespace=namespace)


async def _create_workloads(client: KubeClient, first: int, last: int) -> None:
    indices = iter(range(first, last))
    resource = kind_info("Workload")

    async def worker() -> None:
        for index in indices:
            await client.create(resource, _manifest(index), namespace=NAMESPACE)

    await asyncio.gather(*(worker() for _ in range(CREATE_CONCURRENCY)))


async def _cached_workload_bytes(client: KubeClient, sample: int) -> tuple[float, float]:
    """Bytes per Workload held as the hub's informer holds it, and its JSON size."""
    page = await client.list(kind_info("Workload"), namespace=NAMESPACE, limit=sample)
    raw = [json.dumps(item).encode() for item in page.items]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    kept = []
    for text in raw:
        item = decode_body(text, dict)  # the informer's own decoding (orjson)
        drop_managed_fields(item)
        kept.append(item)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    count = max(1, len(kept))
    return grown / count, sum(len(t) for t in raw) / max(1, len(raw))


def _pending(metrics_url: str) -> int:
    status, body = http_get(metrics_url)
    if status != 200:
        return -1
    total = 0.0
    for family in text_string_to_metric_families(body):
        if family.name == "kueue_pending_workloads":
            total += sum(s.value for s in family.samples if s.name == "kueue_pending_workloads")
    return int(total)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _wait_settled(
    hub: MeasuredProcess, metrics_url: str, expected: int, timeout: float, say: Progress
) -> tuple[int, float]:
    """Wait until the hub counts `expected` pending and its RSS holds still (within 1 % over
    three samples 3 s apart); return (pending counted, seconds waited).

    Not "until the hub is idle": with no quota anywhere the scheduler tries one head per
    cycle, as upstream's does, so pending-condition writes trickle on for long after the
    Workloads are all cached and queued (about 25 per second here)."""
    started = time.monotonic()
    samples: list[int] = []
    seen = -1
    while time.monotonic() - started < timeout:
        time.sleep(3.0)
        seen = _pending(metrics_url)
        rss = _rss_kib(hub.pid)
        samples = [*samples[-2:], rss] if seen >= expected else []
        if len(samples) == 3 and max(samples) - min(samples) <= 0.01 * max(samples):
            break
        say(f"  {seen}/{expected} pending, hub RSS {rss / 1024:.0f} MiB")
    return seen, time.monotonic() - started


def _steps(total: int) -> list[int]:
    marks = [0, *(n for n in (10_000, 30_000) if n < total), total]
    return sorted(set(marks))


def run(workloads: int, sample: int, timeout: float, say: Progress) -> MemoryResult:
    result = MemoryResult(
        started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        workloads=workloads,
        load_average_at_start=os.getloadavg(),
    )
    check_prerequisites(ManagerKind.FLEETQ)
    workdir = RESULTS / f"memory-{int(time.time())}"
    with BenchCluster(
        f"bench-memory-{int(time.time()) % 100000:05d}", ApiserverTuning(), say
    ) as cluster:
        kubeconfig = cluster.access.kubeconfig
        launch = prepare_launch(ManagerKind.FLEETQ, kubeconfig, workdir)
        _raise_budget(workdir / "fleetq-config.yaml")
        install_crds(kubeconfig, launch.crd_dir)
        with MeasuredProcess(launch.argv, log_path=workdir / "hub.log") as hub:
            wait_ready(hub, launch)
            asyncio.run(_setup(kubeconfig))
            created = 0
            for target in _steps(workloads):
                if target > created:
                    say(f"creating Workloads {created} … {target}")
                    asyncio.run(_create(kubeconfig, created, target))
                    created = target
                seen, waited = _wait_settled(hub, launch.metrics_url, target, timeout, say)
                step = Step(
                    workloads=target,
                    pending_seen=seen,
                    rss_mib=round(_rss_kib(hub.pid) / 1024, 1),
                    peak_rss_mib=round((hub.peak_rss_kib() or 0) / 1024, 1),
                    hub_cpu_s=round(hub.cpu_seconds() or 0.0, 1),
                    seconds_to_settle=round(waited, 1),
                )
                result.steps.append(step)
                say(f"{target} pending: RSS {step.rss_mib} MiB (peak {step.peak_rss_mib})")
            per, size = asyncio.run(_sample(kubeconfig, sample))
            result.bytes_per_cached_workload = round(per)
            result.sample_workload_json_bytes = round(size)
            hub.stop()
    return result


def _raise_budget(config: Path) -> None:
    text = config.read_text()
    text = text.replace("  qps: 50\n", f"  qps: {HUB_QPS}\n").replace(
        "  burst: 100\n", f"  burst: {HUB_QPS}\n"
    )
    config.write_text(text)


async def _setup(kubeconfig: Path) -> None:
    async with await KubeClient.from_kubeconfig(kubeconfig, qps=1000, burst=1000) as client:
        await _create_queues(client)


async def _create(kubeconfig: Path, first: int, last: int) -> None:
    async with await KubeClient.from_kubeconfig(kubeconfig, qps=2000, burst=2000) as client:
        await _create_workloads(client, first, last)


async def _sample(kubeconfig: Path, sample: int) -> tuple[float, float]:
    async with await KubeClient.from_kubeconfig(kubeconfig, qps=1000, burst=1000) as client:
        return await _cached_workload_bytes(client, sample)


def print_table(result: MemoryResult) -> None:
    print(f"load average at start: {' / '.join(f'{x:.1f}' for x in result.load_average_at_start)}")
    print("| pending Workloads | hub RSS MiB | peak RSS MiB | hub CPU s (total) | s to settle |")
    print("|---|---|---|---|---|")
    for step in result.steps:
        print(
            f"| {step.workloads:,} ({step.pending_seen:,} counted) | {step.rss_mib} | "
            f"{step.peak_rss_mib} | {step.hub_cpu_s} | {step.seconds_to_settle} |"
        )
    per = result.bytes_per_pending()
    if per is not None:
        print(f"bytes per pending workload (RSS slope): {per:,.0f}")
    if result.bytes_per_cached_workload is not None:
        print(
            f"bytes per cached Workload (informer dict, tracemalloc): "
            f"{result.bytes_per_cached_workload:,.0f} (its JSON: "
            f"{result.sample_workload_json_bytes:,.0f} bytes)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=2000, help="Workloads for tracemalloc")
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds to wait for each step to settle"
    )
    args = parser.parse_args(argv)
    if args.workloads < 1:
        parser.error("--workloads must be at least 1")
    result = run(args.workloads, args.sample, args.timeout, print)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"memory-{result.started.replace(':', '')}.json"
    payload = asdict(result) | {"bytes_per_pending_workload": result.bytes_per_pending()}
    out.write_text(json.dumps(payload, indent=2))
    print_table(result)
    print(f"results: {out}")
    return 0 if result.error is None else 1


if __name__ == "__main__":
    raise SystemExit(main())
