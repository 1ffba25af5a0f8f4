"""The msgspec configuration every API type shares.

- camelCase wire names derived from snake_case attributes, so names match upstream's JSON;
- keyword-only construction, so adding a field never breaks callers;
- `omit_defaults`, so encoded objects carry only what was set (server-side apply owns
  only the fields a writer means to own);
- `gc=False`: API objects are trees without reference cycles, and informer caches hold
  many of them, so skipping cycle tracking saves both memory and collector time.
"""

from __future__ import annotations

import msgspec


class ApiStruct(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel", gc=False):
    """Base of all typed API objects and their parts."""
