"""The seam for kinds that read referenced objects, as the manager wires it: one cache per
referenced resource (shared with a job kind's cache for the same resource, each informer
run once), the lookup answering from them, the bound kind reading through it, and which
jobs a referenced object's change reconciles; chart RBAC lets the manager read them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import structlog

from core.manager.chartgen.job_kinds import rbac_rules
from core.manager.informer_set import ManagerInformers
from core.manager.job_controller import JobController
from core.manager.referenced_lookup import CachedReferences, bind_kind
from integrations.framework.referenced_objects import ReadsReferencedObjects
from integrations.registry import REGISTRY
from integrations.trainjob import trainjob_fields as fields
from integrations.trainjob.kind import TRAINJOB
from tests.builders import kwok_training_runtime, kwok_trainjob


def _informers(*frameworks: str) -> ManagerInformers:
    # Building informers does no I/O: the client is only used once they run (never here).
    client: Any = SimpleNamespace(log=structlog.get_logger("test"))
    return ManagerInformers.create(client, REGISTRY.enabled(frameworks))


def test_referenced_resources_get_caches_and_a_job_kinds_cache_is_shared() -> None:
    informers = _informers("jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob")
    assert set(informers.referenced) == {
        fields.CLUSTER_TRAINING_RUNTIMES,
        fields.TRAINING_RUNTIMES,
        fields.JOBSETS,
    }
    assert informers.referenced[fields.JOBSETS] is informers.jobs["jobset.x-k8s.io/jobset"]
    every = list(informers)
    assert len(every) == len({id(i) for i in every}), "each informer runs once"
    assert not set(map(id, informers.referenced.values())) & set(map(id, informers.engine_feeds))
    alone = _informers("trainer.kubeflow.org/trainjob")
    assert fields.JOBSETS in alone.referenced and alone.referenced[fields.JOBSETS] in list(alone)
    assert _informers("batch/job").referenced == {}


def test_the_bound_kind_reads_the_runtime_from_the_cache() -> None:
    informers = _informers("trainer.kubeflow.org/trainjob")
    runtime = kwok_training_runtime("torch").obj()
    informers.referenced[fields.CLUSTER_TRAINING_RUNTIMES].store.upsert(runtime)
    references = CachedReferences(informers.referenced)
    assert references.get(fields.CLUSTER_TRAINING_RUNTIMES, "", "torch") == runtime
    assert references.get(fields.TRAINING_RUNTIMES, "team-a", "torch") is None
    kind = bind_kind(TRAINJOB, references)
    job = kwok_trainjob("t", nodes=2, gpus_per_node=1, runtime="torch").namespace("a").obj()
    assert [p.count for p in kind.pod_sets(job)] == [2]
    batch = REGISTRY.get("batch/job")
    assert batch is not None and bind_kind(batch, references) is batch


def _controller(informers: ManagerInformers) -> JobController:
    kind = bind_kind(TRAINJOB, CachedReferences(informers.referenced))
    unused: Any = None
    return JobController(
        kind,
        unused,
        unused,
        unused,
        jobs=informers.jobs[kind.framework].store,
        workloads=informers.workloads.store,
        resource_flavors=informers.resource_flavors.store,
        namespaces=informers.namespaces.store,
        pod_priority_classes=informers.pod_priority_classes.store,
        workload_priority_values={},
    )


def _queued(controller: JobController) -> set[str]:
    async def drain() -> set[str]:
        out = set()
        while len(controller.queue):
            key = await controller.queue.get()
            out.add(key)
            controller.queue.done(key)
        return out

    return asyncio.run(drain())


def test_a_child_requeues_its_owner_and_a_runtime_requeues_every_job_of_the_kind() -> None:
    informers = _informers("trainer.kubeflow.org/trainjob")
    jobs = informers.jobs["trainer.kubeflow.org/trainjob"].store
    for name in ("a", "b"):
        jobs.upsert(kwok_trainjob(name, nodes=1, gpus_per_node=0).namespace("ns").obj())
    controller = _controller(informers)
    owned = {
        "kind": "JobSet",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "name": "a",
                    "controller": True,
                }
            ],
        },
    }
    controller.referenced_handlers(fields.JOBSETS).on_add(owned)
    assert _queued(controller) == {"ns/a"}
    standalone = {"kind": "JobSet", "metadata": {"name": "x", "namespace": "ns"}}
    controller.referenced_handlers(fields.JOBSETS).on_add(standalone)
    assert _queued(controller) == set(), "a JobSet of nobody's concerns no TrainJob"
    runtime = kwok_training_runtime("torch").obj()
    controller.referenced_handlers(fields.CLUSTER_TRAINING_RUNTIMES).on_add(runtime)
    assert _queued(controller) == {"ns/a", "ns/b"}


def test_both_charts_let_the_manager_read_what_trainjobs_reference() -> None:
    assert isinstance(TRAINJOB, ReadsReferencedObjects)
    rules = rbac_rules([TRAINJOB])
    for plural in ("clustertrainingruntimes", "trainingruntimes"):
        assert f'resources: ["{plural}"]\n    verbs: ["get", "list", "watch"]' in rules
    assert 'resources: ["jobsets"]\n    verbs: ["get", "list", "watch"]' in rules
