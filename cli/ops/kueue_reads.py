"""Typed reads of fleetq's kinds over plain REST: list and get, decoded into `core.api` structs.

API errors become `OpsError`s that say what to do: a missing CRD means fleetq (or Kueue)
is not installed on that cluster; a 403 names the verb and resource that were refused.
"""

from __future__ import annotations

from typing import TypeVar

from cli.join.cluster_rest import ApiCallError, ClusterCallError, ClusterRest
from cli.ops.ops_errors import ForbiddenError, NotFoundError, OpsError
from core.api.api_struct import ApiStruct
from core.api.codec import decode, decode_list
from core.api.registry import kind_info

T = TypeVar("T", bound=ApiStruct)


def list_objects(rest: ClusterRest, kind: type[T], namespace: str | None = None) -> list[T]:
    """Every object of `kind` (in `namespace`, or everywhere when None or cluster-scoped)."""
    info = kind_info(kind)
    path = info.path(namespace if info.namespaced else None)
    try:
        answer = rest.request("GET", path)
    except ApiCallError as error:
        if error.status == 404:
            raise OpsError(
                f"{rest.endpoint.label}: the API has no {info.plural}.{info.group}; "
                f"is fleetq (or Kueue) installed there?"
            ) from None
        if error.status == 403:
            raise ForbiddenError(str(error)) from None
        raise OpsError(str(error)) from None
    except ClusterCallError as error:
        raise OpsError(str(error)) from None
    return list(decode_list(kind, answer).items)


def get_object(rest: ClusterRest, kind: type[T], name: str, namespace: str | None = None) -> T:
    """One object; NotFoundError names it the way kubectl does."""
    info = kind_info(kind)
    try:
        answer = rest.get(info.path(namespace if info.namespaced else None, name))
    except ClusterCallError as error:
        raise OpsError(str(error)) from None
    if answer is None:
        where = f' in namespace "{namespace}"' if info.namespaced and namespace else ""
        raise NotFoundError(f'{info.singular} "{name}" not found{where}')
    return decode(kind, answer)
