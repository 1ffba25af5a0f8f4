"""Async Kubernetes runtime shared by the hub and the worker agent.

Infrastructure only, no controller logic (kopf's `_cogs` to the hub's `_core`):
- `cluster_config`, `client`: one rate-limited aiohttp client per cluster, raw REST verbs,
  msgspec/orjson bodies, typed errors (`errors`), a write counter (`write_counter`);
- `watch`, `informer`, `object_store`: list+watch streams that never end, caches with
  handlers and indexes;
- `workqueue`: de-duplicating, rate-limited work queues for reconcilers;
- `status_writer`: resourceVersion-guarded status writes that recompute on conflict;
- `events`: aggregated events.k8s.io Events; `leader_election`: a Lease-based leader.
"""
