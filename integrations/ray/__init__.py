"""KubeRay's ray.io/v1 kinds: RayJob, RayCluster and RayService (docs/ray.md).

All three carry a RayCluster spec (a head group and worker groups), so they share how it
becomes pod sets (`cluster_pod_sets`), how an admission is applied to it and taken back
(`cluster_templates`) and the webhook rules for it (`cluster_validation`,
`webhook_scope`); `ray_fields` reads the dicts. Each kind is one module:
`rayjob_kind.RAYJOB` (with `rayjob_submitter`), `raycluster_kind.RAYCLUSTER`,
`rayservice_kind.RAYSERVICE`.
"""
