"""The compact v1beta2 topologyAssignment encoding, both ways, as upstream v0.19.2 writes it."""

from __future__ import annotations

import pytest

from core.adapters.kueue_manifests import (
    ManifestError,
    admission_to_dict,
    workload_from_manifest,
    workload_status_from_dict,
)
from core.adapters.topology_encoding import decode, encode, encode_by_hostname_prefix
from core.engine.model import (
    Admission,
    PodSetAssignment,
    SliceLayer,
    TopologyAssignment,
    TopologyDomainAssignment,
    TopologyRequest,
)

HOST = "kubernetes.io/hostname"


def assignment(
    levels: tuple[str, ...], *domains: tuple[tuple[str, ...], int]
) -> TopologyAssignment:
    return TopologyAssignment(
        levels=levels,
        domains=tuple(TopologyDomainAssignment(values=v, count=c) for v, c in domains),
    )


def hosts(*pairs: tuple[str, int]) -> TopologyAssignment:
    return assignment((HOST,), *(((h,), c) for h, c in pairs))


def test_one_domain_is_universal() -> None:
    assert encode(hosts(("x1", 3))) == {
        "levels": [HOST],
        "slices": [
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "x1"}],
                "podCounts": {"universal": 3},
            }
        ],
    }


def test_common_prefix_and_suffix_are_factored_out() -> None:
    got = encode(hosts(("a-1-z", 1), ("a-22-z", 2)))
    assert got["slices"] == [
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"individual": {"prefix": "a-", "suffix": "-z", "roots": ["1", "22"]}}
            ],
            "podCounts": {"individual": [1, 2]},
        }
    ]


def test_prefix_and_suffix_never_overlap() -> None:
    got = encode(assignment(("rack",), (("ababa",), 1), (("aba",), 1)))
    values = got["slices"][0]["valuesPerLevel"][0]["individual"]
    assert values.get("prefix", "") + values["roots"][1] + values.get("suffix", "") == "aba"
    assert decode(got) == assignment(("rack",), (("ababa",), 1), (("aba",), 1))


def test_upper_levels_shared_by_all_domains_are_universal() -> None:
    got = encode(assignment(("block", "rack"), (("b1", "r1"), 2), (("b1", "r2"), 2)))
    assert got["slices"][0]["valuesPerLevel"] == [
        {"universal": "b1"},
        {"individual": {"prefix": "r", "roots": ["1", "2"]}},
    ]
    assert got["slices"][0]["podCounts"] == {"universal": 2}


def test_node_pools_become_one_slice_each() -> None:
    pools = hosts(
        ("gke-c-pool-a-hash1-aa", 3),
        ("gke-c-pool-a-hash1-bb", 3),
        ("gke-c-pool-b-hash2-cc", 4),
        ("gke-c-pool-b-hash2-dd", 5),
    )
    assert encode_by_hostname_prefix(pools)["slices"] == [
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"individual": {"prefix": "gke-c-pool-a-hash1-", "roots": ["aa", "bb"]}}
            ],
            "podCounts": {"universal": 3},
        },
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"individual": {"prefix": "gke-c-pool-b-hash2-", "roots": ["cc", "dd"]}}
            ],
            "podCounts": {"individual": [4, 5]},
        },
    ]


def test_dns_names_keep_their_common_suffix() -> None:
    names = hosts(
        ("ip-10-24-34-0.us-west-2.compute.internal", 2),
        ("ip-10-24-34-1.us-west-2.compute.internal", 2),
        ("ip-10-24-35-0.us-west-2.compute.internal", 3),
        ("ip-10-24-35-1.us-west-2.compute.internal", 4),
    )
    first = encode_by_hostname_prefix(names)["slices"][0]["valuesPerLevel"][0]["individual"]
    assert first == {
        "prefix": "ip-10-24-34-",
        "suffix": ".us-west-2.compute.internal",
        "roots": ["0", "1"],
    }


def test_the_shorter_of_the_two_forms_is_written() -> None:
    # Same counts everywhere: one slice with a short prefix beats two slices.
    same = hosts(("pool-a-1", 1), ("pool-a-2", 1), ("pool-b-1", 1), ("pool-b-2", 1))
    assert len(encode(same)["slices"]) == 1
    assert len(encode_by_hostname_prefix(same)["slices"]) == 2


@pytest.mark.parametrize(
    "value",
    [
        hosts(("x1", 1)),
        hosts(("node-1", 2), ("node-2", 2), ("other-7", 5)),
        assignment(("block", "rack"), (("b1", "r1"), 1), (("b2", "r9"), 4)),
        hosts(*((f"pool-{p}-node-{i}", i + 1) for p in "abc" for i in range(5))),
    ],
)
def test_decode_inverts_encode(value: TopologyAssignment) -> None:
    assert decode(encode(value)) == value


def test_admission_round_trips_through_the_status() -> None:
    admission = Admission(
        cluster_queue="cq",
        pod_set_assignments=(
            PodSetAssignment(
                name="main",
                flavors={"cpu": "tas"},
                resource_usage={"cpu": 2000},
                count=2,
                topology_assignment=hosts(("x1", 1), ("x2", 1)),
            ),
        ),
    )
    back = workload_status_from_dict({"admission": admission_to_dict(admission)})
    assert back.admission == admission


def test_a_broken_stored_assignment_is_a_clear_error() -> None:
    broken = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "topologyAssignment": {
                        "levels": [HOST],
                        "slices": [{"domainCount": 2, "valuesPerLevel": [], "podCounts": {}}],
                    },
                }
            ],
        }
    }
    with pytest.raises(ManifestError, match="podSetAssignments\\[main\\]"):
        workload_status_from_dict(broken)


def test_workload_topology_requests_are_read() -> None:
    wl = workload_from_manifest(
        {
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 4,
                        "template": {"spec": {"containers": []}},
                        "topologyRequest": {
                            "required": "rack",
                            "podSetSliceRequiredTopology": "host",
                            "podSetSliceSize": 2,
                            "podSetGroupName": "g",
                            "podIndexLabel": "idx",
                        },
                    },
                    {
                        "name": "other",
                        "template": {"spec": {"containers": []}},
                        "topologyRequest": {"podIndexLabel": "idx"},
                    },
                ],
            },
        }
    )
    assert wl.pod_sets[0].topology_request == TopologyRequest(
        required="rack", slices=(SliceLayer(level="host", size=2),), group_name="g"
    )
    # An index label alone asks for nothing.
    other = wl.pod_sets[1].topology_request
    assert other is not None and not other.explicit
