"""Request bodies out as JSON bytes, response bodies in as typed structs or plain dicts.

Typed decoding goes through core.api.codec (cached msgspec decoders, quantities kept as
text, unknown fields skipped); untyped decoding gives `dict`s, for kinds fleetq does not
model. Nothing here builds a generated client model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

import msgspec
import orjson

from core.api import codec
from core.api.api_struct import ApiStruct
from core.api.meta import ListMeta

Decoded = TypeVar("Decoded")
Item = TypeVar("Item")

Body = bytes | ApiStruct | msgspec.Struct | Mapping[str, Any] | Sequence[Any]


class ListPage(ApiStruct, Generic[Item]):
    """One page of a list response: items and where to continue or start watching."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Item] = []


def encode_body(body: Body) -> bytes:
    """JSON bytes of a request body (bytes pass through untouched)."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, ApiStruct):
        return codec.encode(body)
    if isinstance(body, msgspec.Struct):
        return msgspec.json.encode(body)
    return orjson.dumps(body)


def decode_body(data: bytes | memoryview, into: type[Decoded]) -> Decoded:
    """Decode JSON into `into`: `dict` for plain data, or any msgspec type (typed structs).

    Raises msgspec.ValidationError naming the JSON path when a typed field does not fit.
    """
    if into is dict:
        return cast(Decoded, orjson.loads(data))
    result: Decoded = codec.decode(cast(Any, into), data)
    return result


def page_type(into: type[Decoded]) -> type[ListPage[Decoded]]:
    """The list-page type whose items decode as `into`."""
    generic: Any = ListPage
    return cast(type[ListPage[Decoded]], generic[into])
