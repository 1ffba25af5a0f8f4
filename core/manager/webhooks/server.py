"""The hub's admission webhook server: AdmissionReview POSTs over HTTPS on aiohttp.

Routes: a `/mutate-...` and a `/validate-...` path per enabled job kind (e.g.
`/mutate-batch-v1-job`; decisions from the kind through `framework.job_webhook`, cluster
facts from a `JobContextProvider`), and one `/validate-kueue-x-k8s-io-v1beta2-<kind>` per
kind in `paths.VALIDATED`.

Whatever arrives, the server answers and keeps serving:
- a body that is not an AdmissionReview request (not JSON, no request, no uid, wrong
  content type) gets HTTP 400 with a meta/v1 Status saying what is wrong — there is no uid
  to answer to;
- a review about an object that is wrong gets `allowed: false` with the field errors;
- a failure inside a handler (a provider that raises, a bug) gets `allowed: false` with
  code 500 and is logged; with failurePolicy Fail the apiserver then refuses the write,
  which is the safe side.
`create_app` is the plain application (tests drive it without TLS); `WebhookServer`
binds it with the swappable certificate of `tls.ServingCertificate`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import orjson
import structlog
from aiohttp import web

from core.api.registry import KindInfo
from core.manager.webhooks.job_context import JobContextProvider
from core.manager.webhooks.kueue_review import GatedRules, review_kueue_object, wrong_kind_error
from core.manager.webhooks.paths import VALIDATED, job_mutate_path, job_validate_path
from core.manager.webhooks.tls import ServingCertificate
from integrations.framework import job_webhook
from integrations.framework.admission_review import (
    ADMISSION_API_VERSION,
    BadAdmissionReview,
    admission_response,
    parse_request,
)
from integrations.framework.job_kind import JobKind
from integrations.framework.registry import DEFAULT_FRAMEWORKS, FrameworkRegistry
from integrations.registry import REGISTRY

JSON: Final = "application/json"
MAX_BODY_BYTES: Final = 16 * 1024 * 1024
"""An AdmissionReview carries the object and the old object, each up to the apiserver's
request limit (3 MiB by default), plus base64 overhead on the way back."""

Review = Mapping[str, Any]
AdmissionHandler = Callable[[Review], Awaitable[dict[str, Any]]]

_log = structlog.get_logger("core.manager.webhooks")


def admission_handlers(
    provider: JobContextProvider, kinds: FrameworkRegistry, gated: GatedRules | None = None
) -> dict[str, AdmissionHandler]:
    """Every served path and the function answering its reviews."""
    handlers: dict[str, AdmissionHandler] = {}
    for kind in kinds:
        handlers[job_mutate_path(kind.resource)] = _job_handler(provider, kind, mutate=True)
        handlers[job_validate_path(kind.resource)] = _job_handler(provider, kind, mutate=False)
    for validated in VALIDATED:
        handlers[validated.path] = _kueue_handler(validated.info, gated)
    return handlers


def _job_handler(provider: JobContextProvider, kind: JobKind, *, mutate: bool) -> AdmissionHandler:
    answer = job_webhook.mutate_review if mutate else job_webhook.validate_review

    async def review_job(review: Review) -> dict[str, Any]:
        request = parse_request(review)
        error = wrong_kind_error(request.object or {}, kind.resource.kind)
        if error is not None:
            return admission_response(review, errors=[error])
        return answer(kind, review, await provider.job_context(request))

    return review_job


def _kueue_handler(info: KindInfo, gated: GatedRules | None) -> AdmissionHandler:
    async def validate_object(review: Review) -> dict[str, Any]:
        return review_kueue_object(info, review, gated)

    return validate_object


def errored_response(review: Review, code: int, message: str) -> dict[str, Any]:
    """A denial for a review the webhook could not decide (controller-runtime's Errored)."""
    request = review.get("request")
    uid = request.get("uid", "") if isinstance(request, Mapping) else ""
    return {
        "apiVersion": str(review.get("apiVersion") or ADMISSION_API_VERSION),
        "kind": "AdmissionReview",
        "response": {
            "uid": uid,
            "allowed": False,
            "status": {"code": code, "message": message},
        },
    }


def _bad_request(message: str) -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": "BadRequest",
        "code": 400,
        "message": message,
    }
    return web.Response(body=orjson.dumps(status), status=400, content_type=JSON)


def _answer(document: dict[str, Any]) -> web.Response:
    return web.Response(body=orjson.dumps(document), content_type=JSON)


async def _read_review(request: web.Request, max_body_bytes: int) -> Review | str:
    """The AdmissionReview in the body, or why there is none."""
    if request.content_type != JSON:
        return f"Content-Type must be {JSON}, got {request.content_type or 'none'}"
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return f"body larger than {max_body_bytes} bytes"
    if not body:
        return "empty body: expected an AdmissionReview"
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        return f"body is not JSON: {error}"
    if not isinstance(review, dict):
        return f"expected an AdmissionReview object, got a JSON {type(review).__name__}"
    if review.get("kind") not in (None, "AdmissionReview"):
        return f"expected kind AdmissionReview, got {review.get('kind')!r}"
    return review


def _endpoint(
    path: str, handler: AdmissionHandler, max_body_bytes: int
) -> Callable[[web.Request], Awaitable[Any]]:
    async def endpoint(request: web.Request) -> web.Response:
        review = await _read_review(request, max_body_bytes)
        if isinstance(review, str):
            _log.info("webhook.bad_request", path=path, reason=review)
            return _bad_request(review)
        try:
            answer = await handler(review)
        except BadAdmissionReview as error:
            _log.info("webhook.bad_request", path=path, reason=str(error))
            return _bad_request(str(error))
        except Exception as error:
            _log.exception("webhook.handler_failed", path=path)
            message = f"internal error in webhook {path}: {type(error).__name__}: {error}"
            return _answer(errored_response(review, 500, message))
        response = answer.get("response") or {}
        if not response.get("allowed"):
            _log.info(
                "webhook.denied",
                path=path,
                uid=response.get("uid"),
                message=(response.get("status") or {}).get("message"),
            )
        return _answer(answer)

    return endpoint


def create_app(
    provider: JobContextProvider,
    kinds: FrameworkRegistry | None = None,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    gated: GatedRules | None = None,
) -> web.Application:
    """The webhook application: one POST route per served path (`kinds`: the enabled job
    kinds; None: upstream's default, batch/job only; `gated`: rules feature gates add)."""
    kinds = REGISTRY.enabled(DEFAULT_FRAMEWORKS) if kinds is None else kinds
    app = web.Application(client_max_size=max_body_bytes)
    for path, handler in admission_handlers(provider, kinds, gated).items():
        app.router.add_post(path, _endpoint(path, handler, max_body_bytes))
    return app


class WebhookServer:
    """Serves `app` over TLS with `certificate`; rotations need no restart."""

    def __init__(
        self,
        app: web.Application,
        certificate: ServingCertificate,
        *,
        host: str = "",
        port: int = 9443,
        shutdown_timeout_seconds: float = 5.0,
    ) -> None:
        self._runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=shutdown_timeout_seconds
        )
        self._certificate = certificate
        self._host = host or None
        self._requested_port = port
        self._started = False

    @property
    def port(self) -> int:
        """The port listened on (the one the OS chose when asked for port 0)."""
        for address in self._runner.addresses:
            if isinstance(address, tuple):
                return int(address[1])
        raise RuntimeError("the webhook server is not listening")

    async def start(self) -> None:
        if not self._certificate.loaded:
            raise RuntimeError("load a serving certificate before starting the webhook server")
        await self._runner.setup()
        site = web.TCPSite(
            self._runner,
            self._host,
            self._requested_port,
            ssl_context=self._certificate.listener_context(),
        )
        await site.start()
        self._started = True
        _log.info("webhook.listening", host=self._host or "*", port=self.port)

    async def stop(self) -> None:
        if self._started:
            self._started = False
            await self._runner.cleanup()

    async def __aenter__(self) -> WebhookServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()
