"""A working lock table for your own tests, without AWS (needs ``dynalock-django[local]``).

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
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from django.conf import settings
from django.test import override_settings

from .client import close_client, get_client
from .dynamodb import LocalDynamoDB

ENDPOINT_ENV = "DYNALOCK_TEST_ENDPOINT_URL"
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
        "ENDPOINT_URL": local_endpoint_url(),
        "TABLE_NAME": f"dynalock-test-{uuid.uuid4().hex[:12]}",
        "REGION_NAME": "us-east-1",
        **overrides,
    }
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


class DynalockTestMixin:
    """For unittest/Django test cases: each test runs against a fresh lock table."""

    dynalock_overrides: ClassVar[dict[str, Any]] = {}

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        table = lock_table(**self.dynalock_overrides)
        table.__enter__()
        self.addCleanup(table.__exit__, None, None, None)  # type: ignore[attr-defined]
