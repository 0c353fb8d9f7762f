"""The bad days an in-memory DynamoDB can have, switched on from a test: lost answers, a hang, throttling.

The same faults the suite's proxy injects in front of a real server, without
its real seconds: a request that gets no answer costs its client's read
time-out on the store's clock, then raises botocore's ``ReadTimeoutError``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from io import BytesIO
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.exceptions import ReadTimeoutError

# Marks the answers a fault made up, so the retry hook knows botocore need not back off in real time.
INJECTED_HEADER = "x-dynalock-injected"


class Faults:
    """What goes wrong with the next requests, for every client of one in-memory store."""

    def __init__(self, pass_time: Callable[[float], None], *, read_timeout: float) -> None:
        self._pass_time = pass_time
        self._read_timeout = read_timeout
        self._mutex = threading.Lock()
        self._answers_to_lose = 0
        self._requests_to_throttle = 0
        self._hung = False
        self.injected = 0  # requests a fault changed, in all

    def lose_answers(self, count: int = 1) -> None:
        """The next ``count`` requests are carried out, and their answers lost (a read time-out)."""
        with self._mutex:
            self._answers_to_lose += _count(count)

    def hang(self) -> None:
        """Until :meth:`heal`, no request is carried out or answered: each costs a read time-out."""
        with self._mutex:
            self._hung = True

    def throttle(self, count: int = 1) -> None:
        """The next ``count`` requests are refused with ``ThrottlingException`` (botocore retries them)."""
        with self._mutex:
            self._requests_to_throttle += _count(count)

    def heal(self) -> None:
        """No more faults: every request is carried out and answered."""
        with self._mutex:
            self._answers_to_lose = self._requests_to_throttle = 0
            self._hung = False

    def before(self, request: Any) -> AWSResponse | None:
        """The made-up answer for a request that must not reach the store (raises for one that gets none)."""
        with self._mutex:
            hung = self._hung
            throttled = not hung and self._requests_to_throttle > 0
            if throttled:
                self._requests_to_throttle -= 1
            if hung or throttled:
                self.injected += 1
        if hung:
            self._no_answer(request, "hung")
        if throttled:
            body = {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException", "message": "injected: throttled"}
            headers = HTTPHeaders()
            headers["Content-Type"] = "application/x-amz-json-1.0"
            headers[INJECTED_HEADER] = "throttle"
            return AWSResponse(request.url, 400, headers, _Body(json.dumps(body).encode()))
        return None

    def after(self, request: Any) -> None:
        """After the store carried a request out: lose its answer, if told to."""
        with self._mutex:
            lose = self._answers_to_lose > 0
            if lose:
                self._answers_to_lose -= 1
                self.injected += 1
        if lose:
            self._no_answer(request, "answer lost")

    def _no_answer(self, request: Any, what: str) -> None:
        self._pass_time(self._read_timeout)
        raise ReadTimeoutError(endpoint_url=f"injected ({what}): {request.url}")


class _Body(BytesIO):
    """A made-up answer's body, read as botocore reads a socket's."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.read()


def _count(count: int) -> int:
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"Give a number of requests, 1 or more, not {count!r}.")
    return count
