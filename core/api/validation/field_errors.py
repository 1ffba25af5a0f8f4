"""Validation errors that name the offending field, in the apiserver's path notation."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

import msgspec


class ErrorType(enum.StrEnum):
    """What kind of problem a field has (the apiserver's vocabulary)."""

    REQUIRED = "Required value"
    INVALID = "Invalid value"
    DUPLICATE = "Duplicate value"
    NOT_FOUND = "Not found"
    NOT_SUPPORTED = "Unsupported value"
    TOO_MANY = "Too many"
    TOO_LONG = "Too long"
    FORBIDDEN = "Forbidden"


@dataclass(frozen=True, slots=True)
class FieldPath:
    """A path like `spec.resourceGroups[0].flavors[1].name`, built step by step."""

    text: str = ""

    def child(self, *names: str) -> FieldPath:
        text = self.text
        for name in names:
            text = f"{text}.{name}" if text else name
        return FieldPath(text)

    def index(self, position: int) -> FieldPath:
        return FieldPath(f"{self.text}[{position}]")

    def key(self, key: str) -> FieldPath:
        return FieldPath(f"{self.text}[{key}]")

    def __str__(self) -> str:
        return self.text or "<root>"


ROOT = FieldPath()


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field: where, what kind, and what is wrong."""

    path: str
    type: ErrorType
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.type}: {self.message}"


def invalid(path: FieldPath, message: str) -> FieldError:
    return FieldError(str(path), ErrorType.INVALID, message)


def required(path: FieldPath, message: str = "must be set") -> FieldError:
    return FieldError(str(path), ErrorType.REQUIRED, message)


def duplicate(path: FieldPath, message: str) -> FieldError:
    return FieldError(str(path), ErrorType.DUPLICATE, message)


def forbidden(path: FieldPath, message: str) -> FieldError:
    return FieldError(str(path), ErrorType.FORBIDDEN, message)


def too_many(path: FieldPath, message: str) -> FieldError:
    return FieldError(str(path), ErrorType.TOO_MANY, message)


def not_found(path: FieldPath, message: str) -> FieldError:
    return FieldError(str(path), ErrorType.NOT_FOUND, message)


_AT_PATH = re.compile(r"^(?P<message>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")


def decode_error(error: msgspec.ValidationError, at: FieldPath = ROOT) -> FieldError:
    """msgspec's "Expected `str`, got `int` - at `$.x`" as an error on field `at.x`."""
    text = str(error)
    match = _AT_PATH.match(text)
    message, below = (text, "") if match is None else (match["message"], match["path"])
    path = f"{at.text}{below}" if at.text else below.lstrip(".")
    missing = _MISSING.match(message)
    if missing is not None:
        return required(FieldPath(path).child(missing["field"]))
    return FieldError(path or str(ROOT), ErrorType.INVALID, message)


def summary(errors: list[FieldError]) -> str:
    """All errors on one line each, as an admission webhook would return them."""
    return "\n".join(str(error) for error in errors)
