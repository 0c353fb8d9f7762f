"""DynamoDB in this process, for tests: moto's backend behind real boto3 clients, no server, no port.

Each client's requests are answered by moto's in-process backend (the code
its server runs) in place of botocore's HTTP session, one request at a time: moto
checks a condition and writes in two steps, and without that lock two
threads' conditional writes could both pass. No request reaches the
network. Faults (:class:`.Faults`) are switched on from the test and cost
time on the store's clock, so on a :class:`.VirtualClock` a hung request
costs no real time. Needs ``moto`` (``dynalock-django[local]``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import TYPE_CHECKING, Any, cast

from botocore.awsrequest import AWSResponse

from ..clock import SYSTEM_CLOCK, Clock, VirtualClock
from .connection import new_session
from .in_memory_answers import install as install_fast_answers
from .in_memory_faults import INJECTED_HEADER, Faults
from .in_memory_parsing import install as install_parse_cache
from .in_memory_rollback import rollback_by_named_items

if TYPE_CHECKING:
    import boto3.session
    from mypy_boto3_dynamodb import DynamoDBClient

REGION = "us-east-1"
# The recommended botocore config (RECOMMENDED_CONFIG); a request that gets no answer costs one read time-out.
CLIENT_CONFIG: dict[str, Any] = {
    "connect_timeout": 1,
    "read_timeout": 2,
    "retries": {"mode": "standard", "total_max_attempts": 3},
}

# moto keeps one backend a process, whichever store or client asks: one request at a time across all of them.
_ONE_AT_A_TIME = threading.Lock()

# One boto3 session makes every in-memory client of the process: a new one registers botocore's
# hundreds of built-in handlers (about half the CPU of making a client), and these clients take
# nothing from it that could differ (their keys, region and config are given; botocore gives each
# client a copy of its event hooks). Sessions are not thread-safe: one client made at a time.
_SESSION_LOCK = threading.Lock()
_sessions: list[boto3.session.Session] = []


def _moto_dynamodb() -> Any:
    """moto's DynamoDB backend that answers this store's requests (signed with a key no moto account claims);
    looked up each time, as a reset of moto's backends (``mock_aws`` ending) makes new ones."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION]


def _new_session_lock() -> None:
    """A child forked while another thread made a client would find the lock held forever."""
    global _SESSION_LOCK  # replaced in the child, before any thread of its own
    _SESSION_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_session_lock)


class InMemoryDynamoDB:
    """Makes boto3 clients of the process's in-memory DynamoDB; :attr:`faults` breaks the ones it made.

    Every instance reaches the same tables (moto keeps one backend a process): give each test tables of its own.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK, **config: Any) -> None:
        """``config``: botocore ``Config`` arguments for its clients, over :data:`CLIENT_CONFIG`."""
        try:
            from moto.core.botocore_stubber import BotocoreStubber
        except ImportError as error:
            raise ImportError("The in-memory DynamoDB needs moto: pip install 'dynalock-django[local]'.") from error
        install_fast_answers()  # moto's answers, the same JSON for a fraction of the CPU (in_memory_answers)
        install_parse_cache()  # each update expression parsed once (in_memory_parsing)
        self.clock = clock
        self.config = {**CLIENT_CONFIG, **config}
        self.faults = Faults(self._pass_time, read_timeout=float(self.config["read_timeout"]))
        self._backend = BotocoreStubber()
        self._backend.enabled = True

    def client(self) -> DynamoDBClient:
        """A new boto3 client whose every request this store answers."""
        from botocore.config import Config

        with _SESSION_LOCK:
            if not _sessions:
                _sessions.append(new_session())
            dynamodb = _sessions[0].client(
                "dynamodb",
                region_name=REGION,
                aws_access_key_id="in-memory",
                aws_secret_access_key="in-memory",  # noqa: S106 - requests are signed, never sent
                config=Config(**self.config),
            )
        # In place of the HTTP session: what botocore would send, this store answers. A before-send hook
        # would not do: botocore runs every such hook, so the store would carry out a request that a
        # test's own hook (a fault) had already answered.
        cast(Any, dynamodb)._endpoint.http_session = self
        # botocore's stubs type hooks as returning None; this one answers with a delay, as hooks may.
        retry = cast(Any, self._retry_at_once)
        dynamodb.meta.events.register_first("needs-retry.dynamodb", retry, unique_id="dynalock-in-memory-retries")
        return dynamodb

    def send(self, request: Any) -> AWSResponse:
        """This store's answer to a signed request: what botocore's HTTP session would have sent and read."""
        injected = self.faults.before(request)
        if injected is not None:
            return injected
        with _ONE_AT_A_TIME, rollback_by_named_items(request, _moto_dynamodb) as settle:
            response = self._backend(event_name="before-send.dynamodb", request=request)
            if response is not None:
                settle(response.status_code)
        if response is None:  # moto did not recognise it: never let it go out
            raise RuntimeError(f"The in-memory DynamoDB has no answer for {request.url}.")
        self.faults.after(request)
        return response

    def close(self) -> None:
        """What botocore calls when a client closes its HTTP session: this store keeps no connection."""

    def _pass_time(self, seconds: float) -> None:
        if isinstance(self.clock, VirtualClock):
            self.clock.jump(seconds)
        else:
            time.sleep(seconds)  # a real hung request costs real time

    def _retry_at_once(self, *, attempts: int, response: Any, **_: Any) -> float | None:
        """botocore backs off up to a second of real time before retrying throttling; an injected one, not at all."""
        if response is None or attempts >= self.config.get("retries", {}).get("total_max_attempts", 1):
            return None
        with contextlib.suppress(AttributeError):
            if response[0].headers.get(INJECTED_HEADER):
                return 0.0
        return None
