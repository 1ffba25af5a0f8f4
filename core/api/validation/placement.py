"""Taints and tolerations: the rules the apiserver applies to them, in Python."""

from __future__ import annotations

from core.api.core_v1 import TAINT_EFFECTS, TOLERATION_OPERATORS, Taint, Toleration
from core.api.validation.field_errors import FieldError, FieldPath, duplicate, invalid
from core.api.validation.labels import label_value_problem, validate_qualified_name


def validate_taints(taints: list[Taint], path: FieldPath) -> list[FieldError]:
    """Keys are qualified names, values label values, effects known, (key, effect) unique."""
    errors: list[FieldError] = []
    seen: dict[tuple[str, str], int] = {}
    for position, taint in enumerate(taints):
        item = path.index(position)
        errors.extend(validate_qualified_name(taint.key, item.child("key")))
        problem = label_value_problem(taint.value)
        if problem:
            errors.append(invalid(item.child("value"), f"{taint.value!r}: {problem}"))
        if taint.effect not in TAINT_EFFECTS:
            errors.append(
                invalid(
                    item.child("effect"),
                    f"{taint.effect!r} is not one of {', '.join(TAINT_EFFECTS)}",
                )
            )
        identity = (taint.key, taint.effect)
        if identity in seen:
            errors.append(
                duplicate(
                    item,
                    f"taint {taint.key}:{taint.effect} is already listed at index"
                    f" {seen[identity]}; taints must be unique by key and effect",
                )
            )
        else:
            seen[identity] = position
    return errors


def validate_tolerations(tolerations: list[Toleration], path: FieldPath) -> list[FieldError]:
    """The five toleration rules of the CRD, plus key syntax."""
    errors: list[FieldError] = []
    for position, toleration in enumerate(tolerations):
        item = path.index(position)
        if toleration.key:
            errors.extend(validate_qualified_name(toleration.key, item.child("key")))
        elif toleration.operator != "Exists":
            errors.append(
                invalid(
                    item.child("operator"),
                    "a toleration without key must use operator Exists (it then matches"
                    " every taint)",
                )
            )
        if toleration.operator and toleration.operator not in TOLERATION_OPERATORS:
            errors.append(
                invalid(
                    item.child("operator"),
                    f"{toleration.operator!r} is not one of {', '.join(TOLERATION_OPERATORS)}",
                )
            )
        if toleration.operator == "Exists" and toleration.value:
            errors.append(invalid(item.child("value"), "must be empty when operator is Exists"))
        if toleration.effect and toleration.effect not in TAINT_EFFECTS:
            errors.append(
                invalid(
                    item.child("effect"),
                    f"{toleration.effect!r} is not one of {', '.join(TAINT_EFFECTS)}",
                )
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            errors.append(
                invalid(
                    item.child("tolerationSeconds"),
                    "may only be set when effect is NoExecute",
                )
            )
    return errors
