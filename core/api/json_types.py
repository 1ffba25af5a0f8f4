"""`Json`: a JSON object as the Kubernetes clients decode it, where no typed struct is used.

The one definition of the alias the controllers, the adapters and the agent use for an API
object (or a part of one) read from a cache or a response. It is a read-only `Mapping`: code
that builds or changes an object makes a `dict` of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Json = Mapping[str, Any]
"""A JSON object read from a cache or a response, not to be changed."""

JsonDict = dict[str, Any]
"""A JSON object this code owns: what informer caches hold, and what a writer builds."""
