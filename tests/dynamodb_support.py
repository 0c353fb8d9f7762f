"""Shared pieces of the protocol tests: endpoint, clients, request counting, fault injection.

Everything runs against a real DynamoDB-compatible HTTP server on 127.0.0.1.
Faults are injected into the real botocore client with its event hooks.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
from botocore.httpsession import URLLib3Session

from dynalock_django.dynamodb import InMemoryDynamoDB, Lease, LockClient
from dynalock_django.dynamodb.aws.connection import new_session
from dynalock_django.dynamodb.leases.lease import record_of

ENDPOINT_ENV = "DYNALOCK_TEST_ENDPOINT_URL"
REGION = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")

# Short leases keep the suite fast; the ratios match the defaults (20 s / 5 s).
LEASE = 1.0
HEARTBEAT = 0.25
REFRESH = 0.1
# A client option set whose leases no heartbeat renews within a test: for counting what a call sends
# where the count cannot tell renewals apart (the telemetry's request counter; RequestCounter can).
UNRENEWED = {"lease_duration": 60.0, "heartbeat_period": 20.0}
# The longest a test waits for what comes within a heartbeat or two: generous, as the machine may be
# loaded. The timing rules themselves are unit-tested on a fake clock.
PATIENCE = 5.0

# One attempt per call fits a 1 s lease (the client warns otherwise): the
# protocol's own retries are what the tests exercise.
BOTO_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 1},
    connect_timeout=0.25,
    read_timeout=0.5,
)


# The same for the Django layer: its DYNALOCK settings.
SHORT_LEASE_SETTINGS = {
    "LEASE_DURATION": LEASE,
    "HEARTBEAT_PERIOD": HEARTBEAT,
    "REFRESH_PERIOD": REFRESH,
    "BOTO_CONFIG": {"connect_timeout": 0.25, "read_timeout": 0.5, "retries": {"total_max_attempts": 1}},
}


# Where an in-memory client's requests say they go (they never leave the process).
IN_MEMORY_URL_PREFIX = "https://dynamodb."
# The in-process store's stand-in for an endpoint URL (tests/stores.py: MEMORY).
MEMORY_URL = "memory://in-process"


def make_dynamodb(endpoint_url: str, **config: Any) -> Any:
    if endpoint_url == MEMORY_URL:
        options = {name: getattr(BOTO_CONFIG, name) for name in ("connect_timeout", "read_timeout", "retries")}
        return InMemoryDynamoDB(**{**options, **config}).client()
    return new_session().client(
        "dynamodb",
        region_name=REGION,
        endpoint_url=endpoint_url,
        config=BOTO_CONFIG.merge(Config(**config)) if config else BOTO_CONFIG,
    )


def short_lease_client(dynamodb: Any, table_name: str, **options: Any) -> LockClient:
    """A LockClient with the suite's short lease, heartbeat and refresh period (unless ``options`` say otherwise)."""
    options.setdefault("lease_duration", LEASE)
    options.setdefault("heartbeat_period", HEARTBEAT)
    options.setdefault("refresh_period", REFRESH)
    return LockClient(dynamodb, table_name, **options)


def stored_and_own_version(client: LockClient, lease: Lease) -> tuple[str | None, str | None]:
    """The lock item's record version and the lease's, read with no renewal in between (under its write lock)."""
    with record_of(lease).write_lock:
        stored = client.get(lease.key)
        return (stored.record_version_number if stored else None), lease.record_version_number


def create_bare_table(dynamodb: Any, name: str, *, partition_key: str = "key", provisioned: bool = False) -> None:
    """A table made by hand, not by LockClient.create_table (so without the live-locks index); waits until ACTIVE."""
    capacity: dict[str, Any] = (
        {"ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 2}}
        if provisioned
        else {"BillingMode": "PAY_PER_REQUEST"}
    )
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": partition_key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": partition_key, "AttributeType": "S"}],
        **capacity,
    )
    # A table is not found by item requests until it is ACTIVE (DynamoDB, dynalite; moto makes it ACTIVE at once).
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.05, "MaxAttempts": 100})


def unique(prefix: str = "k") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# The threads a client's heartbeat renews from (dynamodb/process_state.py names them): their requests are renewals.
HEARTBEAT_THREAD_PREFIX = "dynalock-heartbeat-"


class RequestCounter:
    """Counts the DynamoDB requests a botocore client makes, each retry included.

    ``calls`` are the requests of the code under test; the heartbeat's renewals are counted apart, in
    ``renewals``: on a slow machine a renewal of a short lease can fall inside any count, and a test
    counting what an acquire or a release sends must not count it (a test about renewals reads ``renewals``).
    """

    def __init__(self, dynamodb: Any) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.renewals: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        # Emitted once per attempt, in the sending thread, before any before-send hook can fail it.
        dynamodb.meta.events.register("request-created.dynamodb", self._count)

    def _count(self, operation_name: str, **_: Any) -> None:
        by_heartbeat = threading.current_thread().name.startswith(HEARTBEAT_THREAD_PREFIX)
        with self._lock:
            (self.renewals if by_heartbeat else self.calls)[operation_name] += 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.renewals.clear()


def error_response(code: str, status: int, message: str = "injected", **fields: Any) -> AWSResponse:
    """An error as DynamoDB sends it; ``fields`` are the error's own members (e.g. CancellationReasons)."""
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message, **fields}).encode()
    response = AWSResponse("http://127.0.0.1/", status, {"Content-Type": "application/x-amz-json-1.0"}, None)
    response._content = body  # type: ignore[attr-defined]
    return response


class FaultInjector:
    """Makes a real botocore client fail some requests, by operation name.

    ``fail(op, code, status, times)`` answers the next ``times`` sends of
    ``op`` with that error without sending them; ``lose_response(op, times)``
    sends them for real, then raises a read time-out as if the answer was lost.
    """

    def __init__(self, dynamodb: Any) -> None:
        self._rules: list[tuple[str, Callable[[Any], Any], list[int]]] = []
        self._lock = threading.Lock()
        self._http = URLLib3Session()
        self.injected: collections.Counter[str] = collections.Counter()
        dynamodb.meta.events.register_first("before-send.dynamodb", self._before_send)

    def fail(
        self,
        operation: str,
        code: str = "ThrottlingException",
        status: int = 400,
        times: int = 1,
        message: str = "injected",
        **fields: Any,
    ) -> None:
        self._add(operation, lambda request: error_response(code, status, message, **fields), times)

    def lose_response(self, operation: str, times: int = 1, *, timed_out: bool = True) -> None:
        """Send for real, then lose the answer: as a read time-out (botocore does not retry it: the lock
        client's rule), or, ``timed_out=False``, as a connection closed before the answer (botocore retries)."""

        def send_then_lose(request: Any) -> Any:
            if request.url.startswith(IN_MEMORY_URL_PREFIX):
                InMemoryDynamoDB().send(request)
            else:
                self._http.send(request)
            if timed_out:
                raise ReadTimeoutError(endpoint_url=f"injected:{request.url}")
            raise ConnectionClosedError(endpoint_url=request.url)

        self._add(operation, send_then_lose, times)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def _add(self, operation: str, action: Callable[[Any], Any], times: int) -> None:
        with self._lock:
            self._rules.append((operation, action, [times]))

    def _before_send(self, request: Any, **_: Any) -> Any:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]
        with self._lock:
            rule = next((r for r in self._rules if r[0] in (operation, "*") and r[2][0] != 0), None)
            if rule is None:
                return None
            rule[2][0] -= 1
            self.injected[operation] += 1
        return rule[1](request)


@contextmanager
def without_old_item_on_refusal(dynamodb: Any) -> Iterator[None]:
    """Act like an endpoint that ignores ReturnValuesOnConditionCheckFailure."""

    def strip(parsed: dict[str, Any], **_: Any) -> None:
        parsed.pop("Item", None)

    events = ["after-call.dynamodb.UpdateItem", "after-call.dynamodb.DeleteItem"]
    for event in events:
        dynamodb.meta.events.register(event, strip)
    try:
        yield
    finally:
        for event in events:
            dynamodb.meta.events.unregister(event, strip)


@contextmanager
def still_building(dynamodb: Any) -> Iterator[None]:
    """Act like DynamoDB while it builds a large table and its index: DescribeTable says CREATING."""

    def creating(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        table["TableStatus"] = "CREATING"
        for index in table.get("GlobalSecondaryIndexes", []):
            index["IndexStatus"] = "CREATING"

    dynamodb.meta.events.register("after-call.dynamodb.DescribeTable", creating)
    try:
        yield
    finally:
        dynamodb.meta.events.unregister("after-call.dynamodb.DescribeTable", creating)


def wait_for(condition: Callable[[], object], timeout: float) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds (a bound in the safe direction)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def json_of_child(code: str, *arguments: str) -> Any:
    """Run ``code`` in a new Python (``python -c``, with ``arguments``): what it printed, as JSON. A child has
    imported nothing of this process (the telemetry tests check what it imports and wraps)."""
    child = subprocess.run(
        [sys.executable, "-c", code, *arguments], capture_output=True, text=True, timeout=60, check=False
    )
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout)


def in_another_thread(call: Callable[[], Any]) -> Any:
    """``call()`` run in a thread of its own (another holder than the caller's thread): its value, or its error."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:
            outcome.append((False, error))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(PATIENCE)
    assert outcome, f"{call!r} still running after {PATIENCE}s"
    returned, value = outcome[0]
    if not returned:
        raise value
    return value
