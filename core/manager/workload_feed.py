"""Workloads into the engine: adds, spec changes, deletes, and decisions made elsewhere.

Every version of a Workload passes the `WorkloadVersions` gate first, so the engine takes
in each version once and never an older one after a newer. Then:
- a new Workload is translated and added; a status it already carries is adopted (a
  restarted hub takes over the admissions it finds);
- a spec change (queue, priority, pod sets, active, reclaimable pods) updates it;
- a status change written by someone else is taken in (see `workload_decisions`: the
  object is adopted as it is, or check states are set); the hub's own writes are
  recognised by content while in flight and by resourceVersion after;
- a delete forgets it and releases its quota.
After each event, a Workload whose status differs from what the engine holds is handed to
the status writer, which writes the engine's view (or, for an object the engine cannot
read, a QuotaReserved=False condition saying why, naming the field; a Warning event says
the same). Whatever a Workload holds, its handler never raises: one unreadable object
is set aside and the others flow on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import structlog

from core.adapters.kueue_manifests import JOB_UID_LABEL, workload_from_manifest
from core.api import codec
from core.api.admission_check import CheckState
from core.api.json_types import Json
from core.api.validation.field_errors import decode_error
from core.api.validation.schema_rules import validate_schema
from core.api.workload import Workload as ApiWorkload
from core.api.workload_conditions import WorkloadConditionType as Cond
from core.engine.engine import StatusChanges
from core.engine.model import Workload
from core.kube.events import EventRecorder, EventType
from core.kube.informer import EventHandlers
from core.kube.object_meta import object_key, resource_version_of, uid_of
from core.manager import watched_kinds as kinds
from core.manager.cluster_object_feed import TRANSLATION_ERRORS
from core.manager.engine_host import EngineHost
from core.manager.event_reasons import EventReason, reference
from core.manager.resource_versions import is_newer
from core.manager.workload_decisions import (
    ExternalChange,
    check_states,
    classify,
    decision_state,
)
from core.manager.workload_status_patch import (
    owned_fields_differ,
    owned_status,
    status_of,
    status_patch,
)
from core.manager.workload_versions import WorkloadVersions

_CHECK_STATES = frozenset(state.value for state in CheckState)

# What a malformed Workload can raise on its way into the engine (a template field of the
# wrong type reaches `.get` on a str or an int, for example).
UNREADABLE = (*TRANSLATION_ERRORS, AttributeError)


def unreadable_reason(obj: Json, error: Exception) -> str:
    """Why a Workload cannot be read, naming the field when the API types can tell (the
    object may predate the schema that now refuses it); else what the translation said."""
    try:
        typed = codec.decode(ApiWorkload, obj)
    except msgspec.ValidationError as invalid:
        return str(decode_error(invalid))
    problems = validate_schema(typed)
    if problems:
        return "; ".join(str(problem) for problem in problems[:_SHOWN_PROBLEMS])
    return str(error) or type(error).__name__


_SHOWN_PROBLEMS = 3


def _translation_input(obj: Json) -> tuple[Any, ...]:
    """What the engine's Workload is built from; an update changing none of it is skipped."""
    meta = obj.get("metadata") or {}
    return (
        obj.get("spec"),
        (meta.get("labels") or {}).get(JOB_UID_LABEL),
        status_of(obj).get("reclaimablePods"),
    )


class WorkloadFeed:
    """Informer handlers (and out-of-band reads) for Workloads; see the module docstring."""

    def __init__(
        self,
        host: EngineHost,
        versions: WorkloadVersions,
        priority_values: Mapping[str, int],
        events: EventRecorder | None = None,
    ) -> None:
        self.host = host
        self.engine = host.engine
        self.versions = versions
        self.priority_values = priority_values
        self.events = events
        # Engine-owned status being written right now, per key (set by the status writer):
        # an event carrying exactly this status is the hub's own write coming back.
        self.in_flight: dict[str, dict[str, Any]] = {}
        # Workloads the engine cannot read, with the reason (written as a condition).
        self.invalid: dict[str, str] = {}
        self.log = structlog.get_logger("core.manager.workloads")

    def handlers(self) -> EventHandlers[dict[str, Any]]:
        return EventHandlers(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)

    # -- informer events -----------------------------------------------------------------
    def on_add(self, obj: Json) -> None:
        if self.versions.admit(obj):
            self._add(obj)

    def on_update(self, old: Json, new: Json) -> None:
        key = object_key(new)
        kept = self.versions.out_of_band(key)
        if kept is not None and is_newer(resource_version_of(kept), resource_version_of(old)):
            old = kept
        if self.versions.admit(new):
            self._changed(old, new)

    def on_delete(self, obj: Json) -> None:
        key = object_key(obj)
        cluster_queue = self.engine.workload_cluster_queue(key) or ""
        self.versions.forget(key)
        self.invalid.pop(key, None)
        self.in_flight.pop(key, None)
        self.host.publish(self.engine.delete_workload(key), touched=(cluster_queue,))

    # -- out-of-band versions ------------------------------------------------------------
    def observe_fresh(self, obj: Json) -> None:
        """A version just read from the apiserver (after a lost race, or on taking over)."""
        key = object_key(obj)
        previous = self.versions.current(key)
        if not self.versions.take(obj):
            return
        if previous is None:
            self._add(obj)
        else:
            self._changed(previous, obj)

    def forget(self, key: str) -> None:
        """The Workload turned out to be gone (NotFound on a write)."""
        namespace, _, name = key.partition("/")
        self.on_delete({"metadata": {"namespace": namespace, "name": name}})

    # -- translation ---------------------------------------------------------------------
    def _translate(self, obj: Json) -> Workload | None:
        key = object_key(obj)
        try:
            workload = workload_from_manifest(obj, self.priority_values)
        except Exception as error:
            if not isinstance(error, UNREADABLE):
                self.log.exception("workload.translation_failed", workload=key)
            message = f"The Workload cannot be queued: {unreadable_reason(obj, error)}"
            if self.invalid.get(key) != message:
                self.invalid[key] = message
                self.log.warning("workload.invalid", workload=key, error=str(error))
                if self.events is not None:
                    self.events.record(
                        reference(obj, kinds.WORKLOADS, "Workload"),
                        EventReason.INVALID_OBJECT,
                        message,
                        type=EventType.WARNING,
                    )
            return None
        self.invalid.pop(key, None)
        return workload

    # -- changes -------------------------------------------------------------------------
    def _add(self, obj: Json) -> None:
        key = object_key(obj)
        workload = self._translate(obj)
        if workload is None:
            self.host.publish([key], wake=False)
            return
        changes = self.engine.add_workload(workload)
        self._publish(key, obj, changes)

    def _resync(self, obj: Json) -> None:
        """Forget what the engine believes and adopt the object as it is now."""
        key = object_key(obj)
        touched = self.engine.workload_cluster_queue(key) or ""
        changes = dict(self.engine.delete_workload(key))
        workload = self._translate(obj)
        if workload is not None:
            changes.update(self.engine.add_workload(workload))
        self.log.info("workload.resynced", workload=key, resource_version=resource_version_of(obj))
        self._publish(key, obj, changes, touched=touched)

    def _changed(self, old: Json, new: Json) -> None:
        key = object_key(new)
        if uid_of(old) != uid_of(new) or not self.host.knows(key):
            # Replaced by a namesake, or never readable before: start from scratch.
            self._resync(new)
            return
        own_write = self._is_own_write(key, new)
        external = not own_write and owned_fields_differ(status_of(old), status_of(new))
        change = ExternalChange.NONE
        if external:
            believed = self.engine.workload_status(key)
            assert believed is not None
            change = classify(
                decision_state(status_of(new)), decision_state(owned_status(believed))
            )
        if change is ExternalChange.ADOPT:
            self._resync(new)
            return
        changes: dict[str, Any] = {}
        touched = self.engine.workload_cluster_queue(key) or ""
        called = False
        if _translation_input(old) != _translation_input(new):
            workload = self._translate(new)
            if workload is not None:
                changes.update(self.engine.update_workload(workload))
                called = True
            elif not self._holds_quota(key):
                # Its new spec cannot be read: queueing the old one would admit what the
                # object no longer says; forget it until it is readable (status says why).
                changes.update(self.engine.delete_workload(key))
                called = True
        if change is not ExternalChange.NONE:
            self.log.info("workload.external_change", workload=key, change=change.value)
            changes.update(self._take_in(key, status_of(new)))
            called = True
        if called or external:
            self._publish(key, new, changes, touched=touched, wake=called)

    def _take_in(self, key: str, status: Json) -> StatusChanges:
        """Admission-check states set by their controllers, one by one."""
        engine = self.engine
        changes: StatusChanges = {}
        believed = engine.workload_status(key)
        held = {c.name: c.state.value for c in believed.admission_checks} if believed else {}
        entries = {
            str(c.get("name")): c
            for c in status.get("admissionChecks") or ()
            if isinstance(c, Mapping)
        }
        for name, state in sorted(check_states(status).items()):
            if held.get(name) != state and state in _CHECK_STATES:
                entry = entries.get(name) or {}
                changes.update(
                    engine.set_admission_check_state(
                        key,
                        name,
                        CheckState(state),
                        str(entry.get("message") or ""),
                        pod_set_updates=tuple(entry.get("podSetUpdates") or ()),
                    )
                )
        return changes

    def _holds_quota(self, key: str) -> bool:
        status = self.engine.workload_status(key)
        reserved = status.condition(Cond.QUOTA_RESERVED) if status is not None else None
        return reserved is not None and reserved.status

    def _is_own_write(self, key: str, obj: Json) -> bool:
        written = self.in_flight.get(key)
        return written is not None and status_patch(status_of(obj), written) is None

    def _publish(
        self,
        key: str,
        obj: Json,
        changes: Mapping[str, Any],
        *,
        touched: str = "",
        wake: bool = True,
    ) -> None:
        keys = set(changes)
        if key in self.invalid or self._differs(key, obj):
            keys.add(key)
        self.host.publish(sorted(keys), touched=(touched,), wake=wake)

    def _differs(self, key: str, obj: Json) -> bool:
        status = self.engine.workload_status(key)
        return status is not None and status_patch(status_of(obj), owned_status(status)) is not None
