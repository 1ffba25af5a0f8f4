"""Fast conversion between wire JSON (or parsed dicts) and the typed API structs.

List and watch responses are decoded straight from bytes by msgspec into lean structs; no
intermediate dicts, no generated client models. Decoders are built once per type.
Unknown fields are skipped, so a newer apiserver or upstream Kueue adding fields never
breaks decoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar, overload

import msgspec

from core.api.api_struct import ApiStruct
from core.api.meta import ListMeta
from core.api.quantity import Quantity
from core.api.registry import kind_info

T = TypeVar("T", bound=ApiStruct)

RawInput = bytes | bytearray | memoryview | str | Mapping[str, Any]


class ObjectList(ApiStruct, Generic[T]):
    """A list response: the items and the resourceVersion to watch from."""

    api_version: str = ""
    kind: str = ""
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[T] = []


def _dec_hook(type_: type, obj: Any) -> Any:
    # Quantities are int-or-string on the wire; keep them as text either way.
    if type_ is Quantity:
        if isinstance(obj, str):
            return Quantity(obj)
        if isinstance(obj, int | float) and not isinstance(obj, bool):
            return Quantity(format(obj, "g") if isinstance(obj, float) else str(obj))
        # A ValueError (not a ValidationError) so msgspec adds the JSON path to the message.
        raise ValueError(f"expected a quantity (string or number), got {obj!r}")
    raise NotImplementedError(f"cannot decode {type_!r}")


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, Quantity):
        return str(obj)
    raise NotImplementedError(f"cannot encode {type(obj)!r}")


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    decoder = _DECODERS.get(type_)
    if decoder is None:
        decoder = _DECODERS[type_] = msgspec.json.Decoder(type_, dec_hook=_dec_hook)
    return decoder


def _resolve(kind: str | type[T]) -> type[Any]:
    return kind_info(kind).type if isinstance(kind, str) else kind


@overload
def decode(kind: type[T], data: RawInput) -> T: ...
@overload
def decode(kind: str, data: RawInput) -> ApiStruct: ...
def decode(kind: str | type[T], data: RawInput) -> Any:
    """Decode one object of `kind` (a type, or a kind name like "ClusterQueue").

    Accepts JSON bytes/str or an already parsed mapping (from YAML or a client library).
    Raises `msgspec.ValidationError` naming the JSON path of a wrongly typed value.
    """
    type_ = _resolve(kind)
    if isinstance(data, Mapping):
        return msgspec.convert(data, type_, dec_hook=_dec_hook)
    return _decoder(type_).decode(data)


def decode_manifest(data: Mapping[str, Any]) -> ApiStruct:
    """Decode a manifest whose `kind` field says what it is."""
    kind = data.get("kind")
    if not isinstance(kind, str):
        raise ValueError("manifest has no kind")
    return decode(kind, data)


@overload
def decode_list(kind: type[T], data: RawInput) -> ObjectList[T]: ...
@overload
def decode_list(kind: str, data: RawInput) -> ObjectList[Any]: ...
def decode_list(kind: str | type[T], data: RawInput) -> ObjectList[Any]:
    """Decode a list response (`{"metadata": {...}, "items": [...]}`)."""
    generic: Any = ObjectList
    list_type = generic[_resolve(kind)]
    if isinstance(data, Mapping):
        return msgspec.convert(data, list_type, dec_hook=_dec_hook)
    result: ObjectList[Any] = _decoder(list_type).decode(data)
    return result


def encode(obj: ApiStruct) -> bytes:
    """JSON bytes of an object, with defaults left out (apiVersion and kind always kept)."""
    return _ENCODER.encode(obj)


def to_builtins(obj: ApiStruct) -> dict[str, Any]:
    """The object as plain dicts/lists/strings, e.g. for a client library or YAML."""
    result: dict[str, Any] = msgspec.to_builtins(obj, enc_hook=_enc_hook)
    return result


def deep_copy(obj: T) -> T:
    """An independent copy; use it before changing an object taken from a shared cache."""
    return decode(type(obj), encode(obj))
