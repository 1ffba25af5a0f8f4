"""The hub's dashboard in a real browser (headless Chromium) against the local fleet.

The module runs a MultiKueue fleet of its own (hub with `--dashboard-port`, agents on both
workers, batch Jobs only), like the shared one of `multikueue_fixtures` and never at the
same time: the shared one is stopped after every test whose successor does not use it.

A user with a ServiceAccount token and read access to Kueue's objects signs in on the
page, sees every view, submits a Job and watches its Workload appear, get admitted on a
worker and finish, all pushed by the server (the page is never reloaded: a marker set on
`window` at sign-in is still there at the end). A user whose token is valid but who has no
RBAC on anything sees authorization errors and no rows; one who may list Workloads in one
namespace only opens that namespace's table and sees only its rows. The history view plots
the queues and, once a job was dispatched, the workers' dispatch latency; the workloads
table groups by worker with counts; a workload's detail shows its Events and its pod's log
tail, read on the worker through the hub (served by the fleet's kwok controller).
Screenshots of every view go to `test-artifacts/dashboard/` (or
`$FLEETQ_TEST_ARTIFACTS/dashboard/`).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet.cluster_access import RunningFleet
from devfleet.kwok_pod_logs import LOG_TEXT
from devfleet.multikueue_fleet import MultiKueueFleet, MultiKueueFleetSpec
from tests.chromium import Chromium
from tests.e2e.multikueue_fixtures import ClusterView, queued_job, until

ARTIFACTS = Path(os.environ.get("FLEETQ_TEST_ARTIFACTS", "test-artifacts")) / "dashboard"
VIEWER_ROLE = f"fleetq-dashboard-e2e-viewer-{uuid.uuid4().hex[:6]}"
KUEUE_READ = ["clusterqueues", "localqueues", "cohorts", "workloads", "resourceflavors"]


NAMESPACE = "dash-e2e"
RUN = uuid.uuid4().hex[:6]
VIEWER, NOBODY = f"dash-viewer-{RUN}", f"dash-nobody-{RUN}"


@pytest.fixture(scope="module")
def dashboard_fleet(
    full_fleet: RunningFleet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MultiKueueFleet]:
    spec = MultiKueueFleetSpec(
        workdir=tmp_path_factory.mktemp("dashboard"),
        name=f"dash{os.getpid() % 10000}",
        namespaces=(NAMESPACE,),
        hub_configuration={"integrations": {"frameworks": ["batch/job"]}},
        manager_quota={"cpu": "2000", "memory": "20Ti", "nvidia.com/gpu": "400"},
        dashboard=True,
    )
    with MultiKueueFleet(full_fleet, spec, progress=lambda line: print(line, flush=True)) as mk:
        yield mk


def _token(view: ClusterView, account: str) -> str:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(view.api_client)
    try:
        core.create_namespaced_service_account(view.namespace, {"metadata": {"name": account}})
    except ApiException as error:
        if error.status != 409:  # made by an earlier test of this module
            raise
    answer = core.create_namespaced_service_account_token(
        account, view.namespace, {"spec": {"expirationSeconds": 900}}
    )
    return str(answer.status.token)


@pytest.fixture
def viewer_binding(dashboard_fleet: MultiKueueFleet) -> Iterator[None]:
    """A ClusterRole reading Kueue's objects, bound to `VIEWER` in the test namespace."""
    from kubernetes import client

    with dashboard_fleet.fleet.manager.api_client() as api_client:
        rbac = client.RbacAuthorizationV1Api(api_client)
        rbac.create_cluster_role(
            {
                "metadata": {"name": VIEWER_ROLE},
                "rules": [
                    {
                        "apiGroups": ["kueue.x-k8s.io"],
                        "resources": [*KUEUE_READ, "multikueueclusters"],
                        "verbs": ["get", "list", "watch"],
                    },
                    {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
                    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
                ],
            }
        )
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": VIEWER_ROLE},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": VIEWER_ROLE,
                },
                "subjects": [{"kind": "ServiceAccount", "name": VIEWER, "namespace": NAMESPACE}],
            }
        )
        try:
            yield
        finally:
            rbac.delete_cluster_role_binding(VIEWER_ROLE)
            rbac.delete_cluster_role(VIEWER_ROLE)


def _sign_in(browser: Chromium, url: str, token: str) -> None:
    browser.navigate(url + "#fleet")
    until(
        lambda: browser.evaluate("document.getElementById('login-form') !== null"),
        "the dashboard page loaded",
        timeout=30,
    )
    until(
        lambda: browser.evaluate("document.getElementById('login').hidden === false"),
        "the sign-in form shown",
        timeout=30,
    )
    browser.evaluate(
        f"window.fleetqLoaded = true; document.getElementById('token').value = {json.dumps(token)};"
        " document.getElementById('login-form').requestSubmit(); true"
    )


def _open_view(browser: Chromium, view: str) -> None:
    browser.evaluate(f"location.hash = {json.dumps(view)}; true")


def _view_shown(browser: Chromium, view: str) -> bool:
    return bool(browser.evaluate(f"document.getElementById('view-{view}') !== null"))


def _wait_view(browser: Chromium, view: str, timeout: float = 30) -> None:
    """Wait for `view` on the page; a timeout says what the page's error box says."""
    try:
        until(lambda: _view_shown(browser, view), f"the {view} view", timeout=timeout)
    except AssertionError as error:
        says = browser.evaluate("document.getElementById('error').textContent")
        raise AssertionError(f"{error}; the page says {says!r}") from None


def _state_of(browser: Chromium, name: str) -> str | None:
    found: Any = browser.evaluate(
        "(() => { for (const row of document.querySelectorAll('#view-workloads tbody tr')) {"
        f" if (row.innerText.includes({json.dumps(name)})) {{"
        " const s = row.querySelector('[data-state]'); return s && s.dataset.state; } }"
        " return null; })()"
    )
    return None if found is None else str(found)


def test_a_viewer_watches_a_job_run_without_reloading(
    dashboard_fleet: MultiKueueFleet, viewer_binding: None
) -> None:
    mk = dashboard_fleet
    assert mk.hub_dashboard_url
    with ClusterView.open(mk.fleet.manager, NAMESPACE) as manager, Chromium() as browser:
        token = _token(manager, VIEWER)
        _sign_in(browser, mk.hub_dashboard_url, token)
        until(lambda: _view_shown(browser, "fleet"), "the fleet view", timeout=30)
        workers = browser.evaluate(
            "[...document.querySelectorAll('[data-worker]')].map(e => e.dataset.worker)"
        )
        assert sorted(workers) == sorted(mk.cluster_names.values())
        until(
            lambda: browser.evaluate("document.querySelectorAll('.bar').length > 0"),
            "capacity bars from the workers' reports",
            timeout=60,
        )
        browser.screenshot(ARTIFACTS / "fleet.png")
        for view in ("queues", "flavors"):
            _open_view(browser, view)
            until(lambda v=view: _view_shown(browser, v), f"the {view} view", timeout=30)
            browser.screenshot(ARTIFACTS / f"{view}.png")
            if view == "queues":
                shown = browser.evaluate("document.getElementById('view-queues').innerText")
                assert mk.cluster_queue in shown
        _open_view(browser, "workloads")
        until(lambda: _view_shown(browser, "workloads"), "the workloads view", timeout=30)

        job = queued_job("watched", mk.spec.local_queue, gpus_per_pod=1, pods=1, run_seconds=6)
        manager.create_job(job)
        seen: list[str] = []

        def progressed(wanted: str) -> bool:
            state = _state_of(browser, "watched")
            if state and (not seen or seen[-1] != state):
                seen.append(state)
            return state == wanted

        until(lambda: progressed("admitted"), "the Job's Workload admitted on the page", 90)
        browser.screenshot(ARTIFACTS / "workloads-admitted.png")
        worker = browser.evaluate(
            "[...document.querySelectorAll('#view-workloads tbody tr')]"
            ".find(r => r.innerText.includes('watched')).children[7].innerText"
        )
        assert worker in mk.cluster_names.values()
        until(lambda: progressed("finished"), "the Job's Workload finished on the page", 120)
        browser.screenshot(ARTIFACTS / "workloads-finished.png")
        assert seen[-2:] == ["admitted", "finished"], seen
        assert browser.evaluate("window.fleetqLoaded === true"), "the page was reloaded"

        browser.evaluate(
            "const g = document.getElementById('group'); g.value = 'worker';"
            " g.dispatchEvent(new Event('change')); true"
        )
        until(
            lambda: browser.evaluate(
                f"document.querySelector('.group[data-group={json.dumps(worker)}]') !== null"
            ),
            "the table grouped by worker",
            timeout=30,
        )
        count = browser.evaluate(
            f"Number(document.querySelector('.group[data-group={json.dumps(worker)}]')"
            ".dataset.count)"
        )
        assert count >= 1
        heading = browser.evaluate(
            f"document.querySelector('.group[data-group={json.dumps(worker)}] h3').innerText"
        )
        assert heading.startswith(f"{worker} — {count} workload")
        browser.screenshot(ARTIFACTS / "workloads-grouped.png")

        _open_view(browser, "history")
        until(lambda: _view_shown(browser, "history"), "the history view", timeout=30)
        until(
            lambda: browser.evaluate(
                "document.querySelectorAll('[data-plot=pending] polyline').length > 0"
                " && document.querySelectorAll('[data-plot=latency] circle').length > 0"
            ),
            "queue lines and a dispatch latency point (sampled every 10 s)",
            timeout=60,
        )
        legend = browser.evaluate("document.getElementById('view-history').innerText")
        assert mk.cluster_queue in legend and worker in legend
        browser.screenshot(ARTIFACTS / "history.png")
        browser.evaluate("document.querySelector('[data-plot=latency]').scrollIntoView(); true")
        browser.screenshot(ARTIFACTS / "history-latency.png")

        name = manager.workload_of_job("watched")["metadata"]["name"]
        _open_view(browser, f"workload/{NAMESPACE}/{name}")
        until(lambda: _view_shown(browser, "workload"), "the workload detail", timeout=30)
        timeline = browser.evaluate("document.querySelector('ol.timeline').innerText")
        assert "Created" in timeline and "Finished" in timeline
        assert "kind: Workload" in browser.evaluate("document.querySelector('pre').innerText")
        browser.screenshot(ARTIFACTS / "workload.png")


def test_a_user_without_rights_sees_an_authorization_error(
    dashboard_fleet: MultiKueueFleet,
) -> None:
    mk = dashboard_fleet
    with ClusterView.open(mk.fleet.manager, NAMESPACE) as manager, Chromium() as browser:
        token = _token(manager, NOBODY)
        _sign_in(browser, mk.hub_dashboard_url, token)

        def refused() -> str | None:
            box = browser.evaluate(
                "(() => { const e = document.getElementById('error');"
                " return e.hidden ? null : e.dataset.kind + ': ' + e.textContent; })()"
            )
            return None if box is None else str(box)

        message = until(refused, "an authorization error on the page", timeout=30)
        assert message.startswith("forbidden: ")
        assert "may not see the fleet view" in message
        assert browser.evaluate("document.querySelectorAll('[data-worker]').length") == 0
        _open_view(browser, "workloads")

        def refused_workloads() -> str | None:
            found = refused()
            return found if found and "may not see the workloads view" in found else None

        message = until(refused_workloads, "an authorization error on the workloads view", 30)
        assert message.startswith("forbidden: ")
        assert browser.evaluate("document.querySelectorAll('#view-workloads').length") == 0
        browser.screenshot(ARTIFACTS / "forbidden.png")


def _listed_cluster_wide(url: str, token: str, namespace: str) -> bool:
    request = urllib.request.Request(
        url + "api/views/workloads", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return namespace in {row["namespace"] for row in json.load(answer)["rows"]}


def test_a_namespace_user_sees_only_that_namespace(
    dashboard_fleet: MultiKueueFleet, viewer_binding: None
) -> None:
    from kubernetes import client

    mk = dashboard_fleet
    team = f"dash-team-{RUN}"
    with ClusterView.open(mk.fleet.manager, NAMESPACE) as manager, Chromium() as browser:
        rbac = client.RbacAuthorizationV1Api(manager.api_client)
        rule = {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list"]}
        rbac.create_namespaced_role(NAMESPACE, {"metadata": {"name": team}, "rules": [rule]})
        rbac.create_namespaced_role_binding(
            NAMESPACE,
            {
                "metadata": {"name": team},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": team},
                "subjects": [{"kind": "ServiceAccount", "name": team, "namespace": NAMESPACE}],
            },
        )
        token = _token(manager, team)
        manager.create_job(
            queued_job("team-job", mk.spec.local_queue, gpus_per_pod=0, pods=1, run_seconds=1)
        )
        # Another namespace's job, which the hub caches but this user may not list.
        other = f"dash-other-{RUN}"
        mk.add_namespace(other)
        with ClusterView.open(mk.fleet.manager, other) as elsewhere:
            elsewhere.create_job(
                queued_job("other-job", mk.spec.local_queue, gpus_per_pod=0, pods=1, run_seconds=1)
            )
        viewer = _token(manager, VIEWER)
        until(
            lambda: _listed_cluster_wide(mk.hub_dashboard_url, viewer, other),
            "the other namespace's Workload listed for a cluster-wide viewer",
            timeout=60,
        )
        _sign_in(browser, mk.hub_dashboard_url, token)
        _open_view(browser, "workloads")
        until(
            lambda: browser.evaluate("document.getElementById('namespace-form') !== null"),
            "the namespace field after the cluster-wide list was refused",
            timeout=30,
        )
        browser.evaluate(
            f"document.getElementById('namespace').value = {json.dumps(NAMESPACE)};"
            " document.getElementById('namespace-form').requestSubmit(); true"
        )
        until(lambda: _state_of(browser, "team-job"), "the team's workload listed", timeout=60)
        namespaces = browser.evaluate(
            "[...document.querySelectorAll('#view-workloads tbody tr')]"
            ".map(r => r.children[0].innerText.split('/')[0])"
        )
        assert set(namespaces) == {NAMESPACE}
        assert other not in browser.evaluate("document.body.innerText")
        assert _listed_cluster_wide(mk.hub_dashboard_url, viewer, other)  # it is still there
        browser.screenshot(ARTIFACTS / "workloads-one-namespace.png")
        mk.remove_namespace(other)


def test_a_workload_detail_shows_its_events_and_its_pods_log_tail(
    dashboard_fleet: MultiKueueFleet, viewer_binding: None
) -> None:
    mk = dashboard_fleet
    with ClusterView.open(mk.fleet.manager, NAMESPACE) as manager, Chromium() as browser:
        token = _token(manager, VIEWER)
        manager.create_job(
            queued_job("logged", mk.spec.local_queue, gpus_per_pod=0, pods=1, run_seconds=300)
        )
        _sign_in(browser, mk.hub_dashboard_url, token)
        _open_view(browser, "workloads")
        until(lambda: _state_of(browser, "logged") == "admitted", "the job admitted", 90)
        name = manager.workload_of_job("logged")["metadata"]["name"]
        _open_view(browser, f"workload/{NAMESPACE}/{name}")
        _wait_view(browser, "workload", timeout=45)

        def log_shown() -> str | None:
            text = browser.evaluate(
                "(() => { const l = document.querySelector('#part-logs .log');"
                " return l ? l.innerText : null; })()"
            )
            return str(text) if text else None

        asked = [time.monotonic()]

        def reload_until_pod() -> str | None:
            found = log_shown()
            if found is None and time.monotonic() - asked[0] > 3:
                # The pod may not run on the worker yet: ask again, now and then.
                asked[0] = time.monotonic()
                browser.evaluate("document.getElementById('reload-detail').click(); true")
            return found

        shown = until(reload_until_pod, "the pod's log part", timeout=90)
        worker = manager.workload_of_job("logged")["status"]["clusterName"]
        assert shown.startswith("logged-") and f"/main on {worker}" in shown, shown
        # The fleet's kwok controller serves every container's log (devfleet/kwok_pod_logs):
        # read on the worker through the hub, as a kubelet's would be.
        assert LOG_TEXT.splitlines()[0] in shown, shown
        events = browser.evaluate("document.getElementById('part-events').innerText")
        assert "Events" in events and "loading" not in events
        assert "RBAC does not allow" not in events
        browser.evaluate("document.getElementById('part-events').scrollIntoView(); true")
        browser.screenshot(ARTIFACTS / "workload-logs.png")
        manager.batch.delete_namespaced_job(
            "logged", NAMESPACE, propagation_policy="Background"
        )  # it would hold the queue for minutes
