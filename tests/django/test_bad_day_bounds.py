"""The Django layer's blocking calls on an endpoint that accepts requests and never answers: each returns or
raises within its timeout plus one read time-out (docs/operations.md), through the fault proxy in front of
the suite's store.

Times are asserted in the safe direction only (at most the bound plus a slack for a loaded machine); the
rules are unit-tested on a fake clock (tests/dynamodb/aws/test_deadlines.py). The breaker is off, so each call
shows the deadline alone: with it on, each would fail even sooner.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from dynalock_django import Leadership, lock_object, lock_objects
from dynalock_django.exceptions import DynamoDBUnavailable
from dynalock_django.leader import run_while_leader

from ..chaos.proxy import FaultProxy, FaultRates
from ..dynamodb.aws.test_bad_day import BAD_DAY_BOTOCORE, READ_TIMEOUT, SLACK
from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

TIMEOUT = 1.0
BOUND = TIMEOUT + READ_TIMEOUT + SLACK
# More attempts than the recommended config's 3, so that a retry after a time-out would take the call past
# its bound: each attempt on a hung endpoint is one read time-out.
BOTOCORE = {**BAD_DAY_BOTOCORE, "retries": {"total_max_attempts": 6}}


@pytest.fixture
def hung(dynalock: dict[str, Any]) -> Iterator[FaultProxy]:
    """DYNALOCK through a proxy that holds every request unanswered; a lease long enough for its time-outs."""
    with FaultProxy(dynalock["ENDPOINT_URL"], FaultRates(), seed=21) as proxy:
        through = {
            **dynalock,
            "ENDPOINT_URL": proxy.url,
            "BOTO_CONFIG": BOTOCORE,
            "BREAKER_THRESHOLD": None,
            "LEASE_DURATION": 60.0,  # past the worst case of one call with these attempts (the client warns)
            "HEARTBEAT_PERIOD": 2.0,
        }
        with override_settings(DYNALOCK=through):
            proxy.hang(60)
            try:
                yield proxy
            finally:
                proxy.hang(0)


@pytest.fixture
def accounts() -> list[Account]:
    return [Account.objects.create(name=f"Acme {i}") for i in range(3)]


def raises_within(bound: float, call: Callable[[], Any]) -> None:
    started = time.monotonic()
    with pytest.raises(DynamoDBUnavailable):
        call()
    elapsed = time.monotonic() - started
    assert elapsed <= bound, f"{elapsed:.2f} s, past its bound of {bound:.2f} s"


def test_lock_object_raises_within_its_timeout_and_one_read_time_out(hung, accounts):
    def locked() -> None:
        with lock_object(accounts[0], timeout=TIMEOUT):
            pytest.fail("locked on an endpoint that does not answer")

    raises_within(BOUND, locked)


def test_lock_objects_raises_within_its_timeout_and_one_read_time_out(hung, accounts):
    def locked() -> None:
        with lock_objects(Account.objects.all(), timeout=TIMEOUT):
            pytest.fail("locked on an endpoint that does not answer")

    raises_within(BOUND, locked)


def test_async_with_lock_object_raises_within_its_timeout_and_one_read_time_out(hung, accounts):
    async def locked() -> None:
        async with lock_object(accounts[0], timeout=TIMEOUT):
            pytest.fail("locked on an endpoint that does not answer")

    raises_within(BOUND, lambda: asyncio.run(locked()))


def test_async_with_lock_objects_raises_within_its_timeout_and_one_read_time_out(hung, accounts):
    async def locked() -> None:  # rows, not a queryset: the test's database is not shared with a thread
        async with lock_objects(*accounts, timeout=TIMEOUT):
            pytest.fail("locked on an endpoint that does not answer")

    raises_within(BOUND, lambda: asyncio.run(locked()))


def test_leadership_raises_within_its_timeout_and_one_read_time_out(hung):
    leader = Leadership("billing-scheduler", timeout=TIMEOUT)
    raises_within(BOUND, leader.acquire)
    assert not leader.is_leader()


def test_run_while_leader_raises_within_its_timeout_and_never_starts_its_command(hung, tmp_path: Path):
    ran = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(ran)!r}, 'w').close()"]
    raises_within(BOUND, lambda: run_while_leader("nightly-report", command, timeout=TIMEOUT))
    assert not ran.exists()
