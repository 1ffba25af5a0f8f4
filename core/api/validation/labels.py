"""Kubernetes label syntax: qualified names, label values, and label selectors."""

from __future__ import annotations

import re

from core.api.meta import LabelSelector
from core.api.validation.field_errors import FieldError, FieldPath, invalid, required

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def qualified_name_problem(text: str) -> str | None:
    """Why `text` is not a qualified name like `example.com/name` (None when it is)."""
    if text == "":
        return "must not be empty"
    prefix, slash, name = text.rpartition("/")
    if slash:
        if not prefix:
            return "prefix before '/' must not be empty"
        if len(prefix) > 253 or not _SUBDOMAIN.match(prefix):
            return f"prefix {prefix!r} must be a DNS subdomain (lowercase, at most 253 characters)"
    if len(name) > 63:
        return f"name part {name!r} must be at most 63 characters"
    if not _NAME.match(name):
        return (
            f"name part {name!r} must consist of alphanumerics, '-', '_' or '.', and start"
            " and end with an alphanumeric"
        )
    return None


def label_value_problem(text: str) -> str | None:
    """Why `text` is not a valid label value (None when it is)."""
    if len(text) > 63:
        return "must be at most 63 characters"
    if not _VALUE.match(text):
        return (
            "must be empty or consist of alphanumerics, '-', '_' or '.', and start and end"
            " with an alphanumeric"
        )
    return None


def validate_qualified_name(text: str, path: FieldPath) -> list[FieldError]:
    problem = qualified_name_problem(text)
    return [invalid(path, f"{text!r}: {problem}")] if problem else []


def validate_labels(labels: dict[str, str], path: FieldPath) -> list[FieldError]:
    """Keys must be qualified names and values label values."""
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors.extend(validate_qualified_name(key, path.key(key)))
        problem = label_value_problem(value)
        if problem:
            errors.append(invalid(path.key(key), f"value {value!r}: {problem}"))
    return errors


def validate_annotation_keys(annotations: dict[str, str], path: FieldPath) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in annotations:
        errors.extend(validate_qualified_name(key, path.key(key)))
    return errors


def validate_label_selector(selector: LabelSelector | None, path: FieldPath) -> list[FieldError]:
    """Operators must be known; In/NotIn need values, Exists/DoesNotExist must have none."""
    if selector is None:
        return []
    errors = validate_labels(selector.match_labels, path.child("matchLabels"))
    for position, requirement in enumerate(selector.match_expressions):
        item = path.child("matchExpressions").index(position)
        errors.extend(validate_qualified_name(requirement.key, item.child("key")))
        if requirement.operator not in SELECTOR_OPERATORS:
            errors.append(
                invalid(
                    item.child("operator"),
                    f"{requirement.operator!r} is not one of {', '.join(SELECTOR_OPERATORS)}",
                )
            )
        elif requirement.operator in ("In", "NotIn") and not requirement.values:
            errors.append(
                required(item.child("values"), f"operator {requirement.operator} needs values")
            )
        elif requirement.operator in ("Exists", "DoesNotExist") and requirement.values:
            errors.append(
                invalid(
                    item.child("values"),
                    f"operator {requirement.operator} must not have values",
                )
            )
    return errors
