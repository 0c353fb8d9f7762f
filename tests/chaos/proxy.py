"""A fault-injecting HTTP proxy on 127.0.0.1 between lock clients and the endpoint.

Each request draws one fate from a seeded random generator: pass, added
latency, connection dropped before forwarding, forwarded but the response
lost (the write *was* applied), a 500, or a throttling error. ``down(seconds)``
makes the endpoint unreachable for a while; ``hang(seconds)`` makes it accept
requests and never answer them (a brownout: each is held, unanswered, then dropped).
"""

from __future__ import annotations

import collections
import http.client
import json
import random
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse


@dataclass(frozen=True)
class FaultRates:
    """Probabilities per request; what remains passes untouched."""

    latency: float = 0.0
    drop: float = 0.0
    lost_response: float = 0.0
    error_500: float = 0.0
    throttle: float = 0.0
    lost_transaction: float = 0.0  # more lost responses, of TransactWriteItems only (applied, never answered)
    latency_seconds: float = 0.2

    def draw(self, rng: random.Random, operation: str) -> str:
        if operation == "TransactWriteItems" and rng.random() < self.lost_transaction:
            return "lost_transaction"
        roll = rng.random()
        for fate in ("drop", "lost_response", "error_500", "throttle", "latency"):
            roll -= getattr(self, fate)
            if roll < 0:
                return fate
        return "pass"


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (its time-out, its deadline) before its answer came is the point: no traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FaultProxy:
    def __init__(self, upstream: str, rates: FaultRates, seed: int) -> None:
        self.upstream = urlparse(upstream)
        self.rates = rates
        self.injected: collections.Counter[str] = collections.Counter()
        self.request_sizes: collections.defaultdict[str, list[int]] = collections.defaultdict(
            list
        )  # bytes, by operation
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._hang_until = 0.0
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # shutdown() waits for serve_forever's next poll: every half second by default, at each workload's end.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def down(self, seconds: float) -> None:
        """Refuse every request for ``seconds`` (the endpoint is unreachable)."""
        with self._lock:
            self._down_until = time.monotonic() + seconds

    def hang(self, seconds: float) -> None:
        """Accept every request for ``seconds`` and answer none (each is dropped when the hang ends)."""
        with self._lock:
            self._hang_until = time.monotonic() + seconds

    def _hang_left(self) -> float:
        with self._lock:
            return self._hang_until - time.monotonic()

    def _fate(self, operation: str) -> str:
        with self._lock:
            now = time.monotonic()
            if now < self._hang_until:
                fate = "hang"
            elif now < self._down_until:
                fate = "down"
            else:
                fate = self.rates.draw(self._rng, operation)
            if fate != "pass":
                self.injected[fate] += 1
            return fate

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                if len(body) < length:
                    # Its sender went away mid-request (a worker killed as a workload ends). Forwarded, the cut
                    # request would hold the endpoint, which serves one request at a time, until it gave up
                    # waiting for the rest: every other client's requests timed out meanwhile.
                    self.close_connection = True
                    return
                operation = self.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
                with proxy._lock:
                    proxy.request_sizes[operation].append(len(body))
                fate = proxy._fate(operation)
                if fate == "hang":
                    while (left := proxy._hang_left()) > 0:
                        time.sleep(min(left, 0.05))
                if fate in ("drop", "down", "hang"):
                    self.close_connection = True
                    self.connection.close()
                    return
                if fate in ("error_500", "throttle"):
                    self._reply_error(fate)
                    return
                if fate == "latency":
                    time.sleep(proxy.rates.latency_seconds)
                status, headers, payload = proxy._forward(self.command, self.path, dict(self.headers), body)
                if fate in ("lost_response", "lost_transaction"):  # applied upstream; the client never hears
                    self.close_connection = True
                    self.connection.close()
                    return
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _reply_error(self, fate: str) -> None:
                if fate == "throttle":
                    status, code = 400, "ThrottlingException"
                else:
                    status, code = 500, "InternalServerError"
                payload = json.dumps(
                    {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected"}
                ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()
