"""The few core/v1 types that appear inside Kueue objects: taints, tolerations, resources.

Pod templates stay raw JSON; their schema is described in `core.api.pod_template`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from core.api.api_struct import ApiStruct
from core.api.markers import Int64, Rule, doc
from core.api.quantity import Quantity

# Resource name → quantity, as in a container's requests (e.g. {"cpu": "500m"}).
ResourceList = dict[str, Quantity]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


class Taint(ApiStruct):
    """A node taint: pods without a matching toleration are kept off (or evicted)."""

    key: Annotated[str, doc("Taint key, a qualified label name.", required=True, max_length=317)]
    effect: Annotated[
        str, doc("NoSchedule, PreferNoSchedule or NoExecute.", required=True, max_length=16)
    ]
    value: Annotated[str, doc("Taint value, a label value.", max_length=63)] = ""
    time_added: Annotated[
        datetime | None, doc("When a NoExecute taint was added (set by Kubernetes).")
    ] = None


class Toleration(ApiStruct):
    """Lets pods run on nodes with a matching taint."""

    key: Annotated[str, doc("Taint key to match; empty matches every key.")] = ""
    operator: Annotated[str, doc("Equal (default) or Exists.")] = ""
    value: Annotated[str, doc("Taint value to match with Equal; empty with Exists.")] = ""
    effect: Annotated[str, doc("Taint effect to match; empty matches every effect.")] = ""
    toleration_seconds: Annotated[
        Int64 | None, doc("How long a NoExecute taint is tolerated before eviction.")
    ] = None


# The apiserver-side checks on toleration lists, shared by every field that holds one.
TOLERATION_RULES = (
    Rule(
        "self.all(x, !has(x.key) || x.key == '' ? has(x.operator) && x.operator == 'Exists'"
        " : true)",
        "a toleration without key must use operator Exists (it then matches every taint)",
    ),
    Rule(
        "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
        "tolerationSeconds may only be set when effect is NoExecute",
    ),
    Rule(
        "self.all(x, !has(x.operator) || x.operator in ['', 'Equal', 'Exists'])",
        "toleration operator must be Equal or Exists",
    ),
    Rule(
        "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) || x.value == ''"
        " : true)",
        "a toleration with operator Exists must not have a value",
    ),
    Rule(
        "self.all(x, !has(x.effect) || x.effect in ['', 'NoSchedule', 'PreferNoSchedule',"
        " 'NoExecute'])",
        "toleration effect must be NoSchedule, PreferNoSchedule or NoExecute",
    ),
)

TAINT_RULES = (
    Rule(
        "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
        "taint effect must be NoSchedule, PreferNoSchedule or NoExecute",
    ),
    Rule(
        "self.all(a, self.exists_one(b, b.key == a.key && b.effect == a.effect))",
        "taints must be unique by key and effect",
    ),
)
