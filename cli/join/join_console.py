"""How a join run looks in a terminal: a line per step as it happens, a table at the end.

Lines name the cluster, what happened and the object; a dry run says "would create" rather
than "created", so a plan can never be mistaken for a change. Secrets are named, never shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.join.apply_outcome import Outcome
from cli.join.duration_text import format_duration
from cli.join.join_report import (
    JoinEvent,
    JoinReport,
    Notice,
    NoticeLevel,
    ObjectResult,
    TokenAction,
    TokenResult,
)
from core.api.kube_time import format_time

_OUTCOME_STYLE = {Outcome.CREATED: "green", Outcome.CHANGED: "yellow", Outcome.UNCHANGED: "dim"}
_DRY_VERB = {
    Outcome.CREATED: "would create",
    Outcome.CHANGED: "would change",
    Outcome.UNCHANGED: "unchanged",
}
_LEVEL_STYLE = {NoticeLevel.INFO: "cyan", NoticeLevel.WARNING: "yellow", NoticeLevel.ERROR: "red"}


class JoinConsole:
    """Prints a run's events as they come; `summary` prints the final table."""

    def __init__(
        self, console: Console, *, dry_run: bool, now: datetime, clusters: Sequence[str] = ()
    ) -> None:
        self.console = console
        self.dry_run = dry_run
        self.now = now
        self._width = max((len(name) for name in clusters), default=7)
        """Known up front, so the columns line up from the first line on."""

    def event(self, event: JoinEvent) -> None:
        cluster = event.worker if isinstance(event, TokenResult) else event.cluster
        self._width = max(self._width, len(cluster))
        line = Text(f"{cluster:<{self._width}}  ", style="bold")
        if isinstance(event, ObjectResult):
            line.append_text(self._object_line(event))
        elif isinstance(event, TokenResult):
            line.append(f"{'token':<12} ", style="magenta")
            line.append(self._token_text(event))
        else:
            line.append_text(self._notice_line(event))
        self.console.print(line, soft_wrap=True)

    def _object_line(self, result: ObjectResult) -> Text:
        verb = _DRY_VERB[result.outcome] if self.dry_run else result.outcome.value
        line = Text(f"{verb:<12} ", style=_OUTCOME_STYLE[result.outcome])
        line.append(result.object)
        details = [*([", ".join(result.fields)] if result.fields else []), result.note]
        details = [detail for detail in details if detail]
        if details:
            line.append(f"  ({'; '.join(details)})", style="dim")
        return line

    def _token_text(self, token: TokenResult) -> str:
        expiry = ""
        if token.expires_at is not None:
            remaining = format_duration((token.expires_at - self.now).total_seconds())
            expiry = f", expires {format_time(token.expires_at)} (in {remaining})"
        reason = f": {token.reason.value}" if token.reason else ""
        return f"{token.action.value}{reason}{expiry}"

    def _notice_line(self, notice: Notice) -> Text:
        line = Text(f"{notice.level.value:<12} ", style=_LEVEL_STYLE[notice.level])
        line.append(notice.text)
        return line

    def summary(self, report: JoinReport) -> None:
        title = "join plan (dry run: nothing changed)" if report.dry_run else "join summary"
        created, changed = ("create", "change") if report.dry_run else ("created", "changed")
        table = Table(title=title, title_justify="left")
        table.add_column("cluster")
        for column in (created, changed, "unchanged"):
            table.add_column(column, justify="right")
        table.add_column("token")
        table.add_column("problems", justify="right")
        for cluster in report.clusters():
            counts = report.outcomes(cluster)
            token = report.token_of(cluster)
            problems = sum(1 for n in report.errors if n.cluster == cluster)
            table.add_row(
                cluster,
                str(counts[Outcome.CREATED]),
                str(counts[Outcome.CHANGED]),
                str(counts[Outcome.UNCHANGED]),
                self._token_cell(token),
                Text(str(problems), style="red") if problems else "",
            )
        self.console.print(table)
        if report.rotated:
            verb = "would rotate" if report.dry_run else "rotated"
            self.console.print(f"{verb} tokens of: {', '.join(report.rotated)}")
        if not report.ok:
            untouched = "" if report.objects else "; nothing was changed"
            self.console.print(
                Text(
                    f"{len(report.errors)} problem(s); see the lines marked error{untouched}",
                    style="red",
                )
            )

    def _token_cell(self, token: TokenResult | None) -> str:
        if token is None:
            return ""
        label = {TokenAction.KEPT: "kept", TokenAction.MINTED: "minted"}.get(
            token.action, "would mint"
        )
        if token.expires_at is None:
            return label
        remaining = format_duration((token.expires_at - self.now).total_seconds())
        due = " (renew soon)" if token.rotation_due else ""
        return f"{label}, {remaining} left{due}"
