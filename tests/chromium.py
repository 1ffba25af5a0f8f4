"""Headless Chromium (Debian's package) driven over its DevTools protocol, for browser tests.

No driver binary and no new Python package: Chromium listens on a DevTools port of its
choosing (written to `DevToolsActivePort` in its profile directory), the test talks to the
page's WebSocket with aiohttp, and four commands are all it needs: navigate, evaluate a
JavaScript expression, capture a screenshot, close. Calls are synchronous (a private event
loop) so tests poll with `devfleet.polling.until` like every other e2e test.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

CHROMIUM = "chromium"


class ChromiumError(RuntimeError):
    pass


def chromium_binary() -> str:
    found = shutil.which(CHROMIUM)
    if found is None:
        raise ChromiumError("chromium is not installed (apt-get install -y chromium; .ci/run does)")
    return found


class Chromium:
    """One headless browser with one page (see module docstring)."""

    def __init__(self, *, width: int = 1400, height: int = 1000) -> None:
        self._profile = Path(tempfile.mkdtemp(prefix="fleetq-chromium-"))
        self._size = (width, height)
        self._process: subprocess.Popen[bytes] | None = None
        self._loop = asyncio.new_event_loop()
        self._session: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._ids = itertools.count(1)

    def __enter__(self) -> Chromium:
        width, height = self._size
        self._process = subprocess.Popen(
            [
                chromium_binary(),
                "--headless=new",
                "--no-sandbox",  # tests run as root in CI
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            self._loop.run_until_complete(self._connect())
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._socket is not None:
            self._loop.run_until_complete(self._socket.close())
        if self._session is not None:
            self._loop.run_until_complete(self._session.close())
        self._loop.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
        shutil.rmtree(self._profile, ignore_errors=True)

    async def _connect(self) -> None:
        port_file = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.is_file() or not port_file.read_text().strip():
            if self._process is not None and self._process.poll() is not None:
                raise ChromiumError(f"chromium exited with {self._process.returncode}")
            if time.monotonic() > deadline:
                raise ChromiumError("chromium did not open its DevTools port in 30 s")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            targets = json.load(answer)
        page = next(t for t in targets if t.get("type") == "page")
        self._session = aiohttp.ClientSession()
        self._socket = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self._call("Page.enable")
        await self._call("Runtime.enable")

    async def _call(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._socket is not None
        number = next(self._ids)
        await self._socket.send_json({"id": number, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self._socket.receive_json(), 60)
            if message.get("id") != number:
                continue  # an event; the tests poll the page instead
            if "error" in message:
                raise ChromiumError(f"{method}: {message['error']}")
            return dict(message.get("result") or {})

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self._loop.run_until_complete(self._call(method, **params))

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression}: {result['exceptionDetails']}")
        return (result.get("result") or {}).get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
