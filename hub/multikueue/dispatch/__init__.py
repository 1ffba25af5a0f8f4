"""MultiKueue dispatch on the hub: remote copies, dispatchers, status back, GC.

- `group_plan` (pure): for one manager Workload and its copies, the next steps, by
  upstream's rules; `status_changes`, `remote_copy`, `workload_facts` (pure): the writes
  it asks for and the facts it reads;
- `dispatchers` (AllAtOnce, Incremental, External) and `capacity_dispatcher` with
  `capacity_view`: who gets a copy;
- `workload_reconciler`: reads caches, plans, runs the steps; `remote_writes` and
  `job_sync`: every write to workers and the Job status copied back; `pending_writes`:
  our own writes the caches have not shown yet, so no write is sent twice;
- `garbage_collector`: copies whose manager Workload is gone;
- `dispatch_metrics`; `settings`; `service`: `MultiKueueDispatch`, all of it as one task.
"""

from hub.multikueue.dispatch.service import MultiKueueDispatch
from hub.multikueue.dispatch.settings import DispatchSettings

__all__ = ["DispatchSettings", "MultiKueueDispatch"]
