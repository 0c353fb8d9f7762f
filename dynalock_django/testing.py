"""Locks for your own tests, without AWS (needs ``dynalock-django[local]``).

In memory, on a clock the test moves (no server, no port, milliseconds a test)::

    with locks_in_memory() as mem:                       # or the pytest fixture dynalock_in_memory
        other = mem.new_client()                         # another process's client, same store and clock
        lease = other.acquire("nightly")
        other.close(release=False)                       # that process dies
        mem.advance(settings.DYNALOCK["LEASE_DURATION"])  # a lease later...
        assert mem.client.try_acquire("nightly")         # ...get_client() takes it over

On a real endpoint (moto's server, or $DYNALOCK_TEST_ENDPOINT_URL), in real time.
pytest (``pytest_plugins = ["dynalock_django.testing"]`` in your conftest)::

    def test_edit(client, dynalock_table): ...      # DYNALOCK points at a fresh table

unittest / Django TestCase::

    class EditTests(DynalockTestMixin, TestCase): ...

One local DynamoDB endpoint (moto, one request at a time) serves the whole
run; ``$DYNALOCK_TEST_ENDPOINT_URL`` points it at another endpoint instead.
Each test gets its own table, so no lock leaks from one test to the next, and
the table is deleted when the test ends.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from django.conf import settings
from django.test import override_settings

from .client import build_client, client_replaced_by, close_client, get_client
from .dynamodb import Faults, InMemoryDynamoDB, LocalDynamoDB, LockClient, RetryBudgetWarning, VirtualClock

__all__ = [
    "ENDPOINT_ENV",
    "DynalockTestMixin",
    "LocksInMemory",
    "dynalock_in_memory",
    "dynalock_table",
    "local_endpoint_url",
    "lock_table",
    "locks_in_memory",
]

ENDPOINT_ENV = "DYNALOCK_TEST_ENDPOINT_URL"
"""The environment variable naming another endpoint for the tests' tables (DynamoDB Local, or AWS)."""
# moto accepts any credentials; boto3 only needs some to sign requests.
_FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}

logger = logging.getLogger("dynalock_django.testing")

_shared_endpoint: LocalDynamoDB | None = None
_shared_lock = threading.Lock()


def local_endpoint_url() -> str:
    """The endpoint for tests: $DYNALOCK_TEST_ENDPOINT_URL, or a local one started once per process."""
    global _shared_endpoint
    if os.environ.get(ENDPOINT_ENV):
        return os.environ[ENDPOINT_ENV]
    with _shared_lock:
        if _shared_endpoint is None:
            for name, value in _FAKE_CREDENTIALS.items():
                os.environ.setdefault(name, value)
            _shared_endpoint = LocalDynamoDB()
            _shared_endpoint.start()
            atexit.register(_shared_endpoint.stop)
        return _shared_endpoint.endpoint_url


@contextmanager
def lock_table(**overrides: Any) -> Iterator[dict[str, Any]]:
    """Point ``DYNALOCK`` at a new table on the test endpoint while the block runs; yields the settings."""
    dynalock = {
        **getattr(settings, "DYNALOCK", {}),
        "TABLE_NAME": f"dynalock-test-{uuid.uuid4().hex[:12]}",
        "REGION_NAME": "us-east-1",
        **overrides,
    }
    if "ENDPOINT_URL" not in overrides:  # an endpoint named here needs no local one
        dynalock["ENDPOINT_URL"] = local_endpoint_url()
    with override_settings(DYNALOCK=dynalock):
        get_client().create_table()
        try:
            yield dynalock
        finally:
            _delete_table(dynalock["TABLE_NAME"])
            close_client(release=False)


def _delete_table(table_name: str) -> None:
    """The test's table goes with it: an endpoint that outlives the run (DynamoDB Local, AWS) keeps
    no litter, and the shared moto server's memory (and its garbage collector's pauses) stays small."""
    try:
        get_client().dynamodb.delete_table(TableName=table_name)
    except Exception as error:  # the endpoint may be gone with its test: nothing then to delete
        logger.warning("Could not delete the test table %r: %s", table_name, error)


class LocksInMemory:
    """What :func:`locks_in_memory` yields: an in-process lock table, its clock, its faults and its clients."""

    def __init__(self, table_name: str) -> None:
        # Its wall clock starts at the machine's now: the items' stamps read as today's (pages compare with it).
        self.clock = VirtualClock(wall=time.time())
        self.store = InMemoryDynamoDB(self.clock)
        self.faults: Faults = self.store.faults
        self.table_name = table_name
        self._clients: list[LockClient] = []
        self.client = self.new_client()

    def new_client(self, **options: Any) -> LockClient:
        """Another process's LockClient on the same table and clock; ``options`` override the DYNALOCK settings."""
        with warnings.catch_warnings():
            # The store's botocore config is ours, not the project's, and its time-outs cost virtual seconds.
            warnings.simplefilter("ignore", RetryBudgetWarning)
            client = build_client(self.store.client(), clock=self.clock, **options)
        self._clients.append(client)
        return client

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass: every heartbeat and waiter due on the way runs, in order."""
        self.clock.advance(seconds)

    def close(self) -> None:
        self.faults.heal()
        for client in self._clients:
            client.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RetryBudgetWarning)
            self.store.client().delete_table(TableName=self.table_name)


@contextmanager
def locks_in_memory(**overrides: Any) -> Iterator[LocksInMemory]:
    """While the block runs, ``get_client()`` is a client of a new in-process lock table on a virtual clock.

    ``overrides`` change DYNALOCK settings for the block (``LEASE_DURATION=10.0``). The clock starts
    still: it moves when the test calls ``advance`` and while the test's thread waits in a lock call.
    """
    dynalock = {
        **getattr(settings, "DYNALOCK", {}),
        "TABLE_NAME": f"dynalock-memory-{uuid.uuid4().hex[:12]}",
        "ENDPOINT_URL": None,
        **overrides,
    }
    with override_settings(DYNALOCK=dynalock):
        memory = LocksInMemory(dynalock["TABLE_NAME"])
        try:
            memory.client.create_table()
            with client_replaced_by(memory.client):
                yield memory
        finally:
            memory.close()


try:
    import pytest
except ImportError:  # unittest users need no pytest
    pass
else:

    @pytest.fixture
    def dynalock_table() -> Iterator[dict[str, Any]]:
        """DYNALOCK pointed at a fresh lock table for this test."""
        with lock_table() as dynalock:
            yield dynalock

    @pytest.fixture
    def dynalock_in_memory() -> Iterator[LocksInMemory]:
        """``get_client()`` on an in-process lock table and a virtual clock (:func:`locks_in_memory`)."""
        with locks_in_memory() as memory:
            yield memory


class DynalockTestMixin:
    """For unittest/Django test cases: each test runs against a fresh lock table."""

    dynalock_overrides: ClassVar[dict[str, Any]] = {}

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        table = lock_table(**self.dynalock_overrides)
        table.__enter__()
        self.addCleanup(table.__exit__, None, None, None)  # type: ignore[attr-defined]
