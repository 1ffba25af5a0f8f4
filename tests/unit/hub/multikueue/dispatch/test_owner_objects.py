"""Which manager objects stand for a Workload's owner job, and which worker objects are
our copies of it: one Job, every Pod of a pod group, or one LeaderWorkerSet standing for
several group Workloads; and where a LeaderWorkerSet's further groups may go."""

from __future__ import annotations

from typing import Any

from core.api.codec import to_builtins
from core.kube.object_meta import object_key
from core.kube.object_store import ObjectStore
from hub.multikueue.dispatch import owner_objects
from hub.multikueue.dispatch.sibling_placement import SiblingPlacement, sibling_placement
from hub.multikueue.dispatch.workload_facts import controller_owner
from integrations.batch_job.kind import BATCH_JOB
from integrations.framework.job_capabilities import composed
from integrations.framework.labels import COMPONENT_WORKLOAD_INDEX_ANNOTATION
from integrations.framework.priority import PriorityClasses
from integrations.framework.webhook_context import WebhookContext
from integrations.framework.workload_builder import build_workload
from integrations.leaderworkerset.kind import LEADERWORKERSET
from integrations.pod.kind import POD
from tests.builders import Job, LeaderWorkerSet, Pod

ORIGIN = "mk"
Json = dict[str, Any]


def store(*objects: Json) -> ObjectStore[dict[str, Any]]:
    cache: ObjectStore[dict[str, Any]] = ObjectStore()
    for obj in objects:
        cache.upsert(obj)
    return cache


def no_pending(_key: str, cached: Json | None) -> Json | None:
    return cached


def group_members() -> list[Json]:
    return [
        POD.default(
            Pod(n, "team-a").uid(f"uid-{n}").queue("team").group("g", 2).obj(), WebhookContext()
        )
        for n in ("g-0", "g-1")
    ]


def group_workload(members: list[Json]) -> Json:
    parts = composed(POD)
    assert parts is not None
    group = parts.compose("team-a", "g", members)
    built = build_workload(POD, group, PriorityClasses())
    return to_builtins(parts.composed_workload(built, group))


def pods_store(*pods: Json) -> ObjectStore[dict[str, Any]]:
    parts = composed(POD)
    assert parts is not None
    cache = store(*pods)
    cache.add_indexer(owner_objects.MEMBERS_INDEX, owner_objects.members_index(parts))
    return cache


def test_a_pod_groups_job_is_its_members_and_each_is_copied_under_its_own_name() -> None:
    members = group_members()
    workload = group_workload(members)
    owner = controller_owner(workload)
    assert owner is not None
    job = owner_objects.local_job(POD, workload, owner, pods_store(*members))
    assert job is not None
    assert [m["metadata"]["name"] for m in owner_objects.local_objects(POD, workload, job)] == [
        "g-0",
        "g-1",
    ]
    assert owner_objects.copied_names(POD, workload, owner, job) == ["g-0", "g-1"]
    copies = [POD.remote_job(m, workload_name="g", origin=ORIGIN) for m in members]
    stranger = POD.remote_job(members[1], workload_name="another", origin=ORIGIN)
    assert (
        owner_objects.remote_objects(POD, workload, ["g-0", "g-1"], store(*copies), no_pending)
        == copies
    )
    assert owner_objects.remote_objects(
        POD, workload, ["g-0", "g-1"], store(copies[0], stranger), no_pending
    ) == [copies[0]], "a Pod of that name naming another Workload is not ours"


def test_a_group_whose_owning_pods_are_all_gone_has_no_manager_job_yet() -> None:
    members = group_members()
    workload = group_workload(members)
    owner = controller_owner(workload)
    assert owner is not None
    newcomer = POD.default(
        Pod("g-9", "team-a").uid("uid-g-9").queue("team").group("g", 2).obj(), WebhookContext()
    )
    assert owner_objects.local_job(POD, workload, owner, pods_store(newcomer)) is None
    assert owner_objects.local_job(POD, workload, owner, pods_store(members[1], newcomer))


def test_a_single_jobs_copy_is_the_one_of_its_name_naming_this_workload() -> None:
    local = Job("train", "team-a").uid("job-uid").queue("team").obj()
    workload = to_builtins(build_workload(BATCH_JOB, local, PriorityClasses()))
    owner = controller_owner(workload)
    assert owner is not None
    assert owner_objects.local_job(BATCH_JOB, workload, owner, store(local)) == local
    replaced = {**local, "metadata": {**local["metadata"], "uid": "another-uid"}}
    assert owner_objects.local_job(BATCH_JOB, workload, owner, store(replaced)) is None
    name = workload["metadata"]["name"]
    copy = BATCH_JOB.remote_job(local, workload_name=name, origin=ORIGIN)
    found = owner_objects.remote_objects(BATCH_JOB, workload, ["train"], store(copy), no_pending)
    assert found == [copy]
    assert (
        owner_objects.remote_objects(
            BATCH_JOB, workload, ["train"], store(copy), lambda _key, _cached: None
        )
        == []
    ), "deleted by us: the cache has not caught up"


def lws_workloads(replicas: int = 2) -> tuple[Json, list[Json]]:
    builder = LeaderWorkerSet("serve", "team-a", replicas=replicas, size=2)
    local = LEADERWORKERSET.default(builder.uid("lws-uid").queue("team").obj(), WebhookContext())
    workloads = []
    for wanted in LEADERWORKERSET.wanted_group_workloads(local):
        built = build_workload(LEADERWORKERSET, local, PriorityClasses())
        workloads.append(to_builtins(LEADERWORKERSET.group_workload(built, local, wanted)))
    return local, workloads


def test_one_lws_copy_stands_for_each_of_its_group_workloads() -> None:
    local, workloads = lws_workloads()
    copy = LEADERWORKERSET.remote_job(
        local, workload_name=workloads[0]["metadata"]["name"], origin=ORIGIN
    )
    copy["metadata"]["uid"] = "worker-uid"
    for workload in workloads:
        owner = controller_owner(workload)
        assert owner is not None and owner.name == "serve"
        found = owner_objects.remote_objects(
            LEADERWORKERSET, workload, ["serve"], store(copy), no_pending
        )
        assert found == [copy]
    other_local, _ = lws_workloads()
    other_local["metadata"]["uid"] = "recreated-uid"
    stale = LEADERWORKERSET.remote_job(other_local, workload_name="x", origin=ORIGIN)
    assert (
        owner_objects.remote_objects(
            LEADERWORKERSET, workloads[0], ["serve"], store(stale), no_pending
        )
        == []
    ), "a copy of an earlier LeaderWorkerSet of that name is not this one's"
    assert object_key(copy) == "team-a/serve"


def placed(workload: Json, cluster: str) -> Json:
    return {**workload, "status": {"clusterName": cluster}}


def test_the_first_group_of_an_lws_is_dispatched_and_the_others_follow_it() -> None:
    _, (first, second) = lws_workloads()
    assert first["metadata"]["annotations"][COMPONENT_WORKLOAD_INDEX_ANNOTATION] == "0"
    assert sibling_placement(first, [second]) == SiblingPlacement()
    assert sibling_placement(second, [first]) == SiblingPlacement(wait=True)
    assert sibling_placement(second, [placed(first, "w2")]) == SiblingPlacement(cluster="w2")
    assert sibling_placement(first, [placed(second, "w1")]) == SiblingPlacement(cluster="w1")
    assert sibling_placement(second, []) == SiblingPlacement(), "alone, it is the primary"
