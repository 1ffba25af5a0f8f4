"""What a join run did (or, dry, would do): one record per object, per token, per problem.

The run emits each record as it happens (progress lines) and returns them all (the summary
table, tests, `-o json` one day). Records are plain data with no formatting in them.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from cli.join.apply_outcome import Outcome
from cli.join.token_rotation import MintReason


class TokenAction(enum.StrEnum):
    KEPT = "kept"
    MINTED = "minted"
    WOULD_MINT = "would mint"


class NoticeLevel(enum.StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class ObjectResult:
    cluster: str
    object: str
    """`Kind namespace/name`."""
    outcome: Outcome
    fields: tuple[str, ...] = ()
    """For `changed`: the fields that differ."""
    note: str = ""


@dataclass(frozen=True, slots=True)
class TokenResult:
    worker: str
    action: TokenAction
    reason: MintReason | None
    """Why a token was (or would be) minted; None when kept."""
    expires_at: datetime | None
    rotation_due: bool = False


@dataclass(frozen=True, slots=True)
class Notice:
    cluster: str
    level: NoticeLevel
    text: str


JoinEvent = ObjectResult | TokenResult | Notice


@dataclass
class JoinReport:
    dry_run: bool
    dispatcher: str
    objects: list[ObjectResult] = field(default_factory=list)
    tokens: list[TokenResult] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    def record(self, event: JoinEvent) -> None:
        if isinstance(event, ObjectResult):
            self.objects.append(event)
        elif isinstance(event, TokenResult):
            self.tokens.append(event)
        else:
            self.notices.append(event)

    @property
    def errors(self) -> list[Notice]:
        return [notice for notice in self.notices if notice.level is NoticeLevel.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def outcomes(self, cluster: str) -> Counter[Outcome]:
        return Counter(result.outcome for result in self.objects if result.cluster == cluster)

    def outcome_of(self, cluster: str, object_name: str) -> Outcome | None:
        for result in self.objects:
            if result.cluster == cluster and result.object == object_name:
                return result.outcome
        return None

    def clusters(self) -> list[str]:
        """Clusters in the order they first appear."""
        seen: dict[str, None] = {}
        for result in self.objects:
            seen.setdefault(result.cluster, None)
        for notice in self.notices:
            seen.setdefault(notice.cluster, None)
        for token in self.tokens:
            seen.setdefault(token.worker, None)
        return list(seen)

    def token_of(self, worker: str) -> TokenResult | None:
        return next((token for token in self.tokens if token.worker == worker), None)

    @property
    def rotated(self) -> list[str]:
        """Workers whose token was replaced (or would be, dry) although one was stored."""
        return [
            token.worker
            for token in self.tokens
            if token.action is not TokenAction.KEPT and token.reason is not MintReason.NO_SECRET
        ]
