from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynalock_django.client import get_client
from dynalock_django.dynamodb import LockClient
from dynalock_django.testing import lock_table

from ..dynamodb_support import HEARTBEAT, LEASE, REFRESH, RequestCounter, make_dynamodb

# Short leases, one attempt per call: as in the protocol tests.
FAST = {
    "LEASE_DURATION": LEASE,
    "HEARTBEAT_PERIOD": HEARTBEAT,
    "REFRESH_PERIOD": REFRESH,
    "BOTO_CONFIG": {"connect_timeout": 0.25, "read_timeout": 0.5, "retries": {"total_max_attempts": 1}},
}


@pytest.fixture(autouse=True)
def dynalock(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Every Django-layer test runs against its own lock table on the local endpoint."""
    with lock_table(**FAST) as settings:
        yield settings


@pytest.fixture
def other_holder(dynalock: dict[str, Any]) -> Iterator[LockClient]:
    """Another process's client on the same table (say, Bob's server)."""
    client = LockClient(
        make_dynamodb(dynalock["ENDPOINT_URL"]),
        dynalock["TABLE_NAME"],
        lease_duration=LEASE,
        heartbeat_period=HEARTBEAT,
        refresh_period=REFRESH,
    )
    yield client
    client.close(release=False)


@pytest.fixture
def requests_made() -> RequestCounter:
    return RequestCounter(get_client().dynamodb)
