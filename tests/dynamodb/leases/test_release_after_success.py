"""The rule for a release that fails at a block's end (docs/guarantees.md): success stays success.

A release DynamoDB did not answer, after a block that held its lease to the end, lets the block's
result stand: the lease is no longer renewed (it frees itself within one lease), the failure is
logged once and counted. A lease lost during the block still raises; a block's own exception wins.
"""

from __future__ import annotations

import logging

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable, LockLost, arelease_at_block_end, release_at_block_end

from ...dynamodb_support import LEASE, FaultInjector
from ...otel_support import described_as_their_keys, recorded

RELEASE_LOG = "dynalock_django.release"


def failing_writes(dynamodb: object, times: int = 1) -> FaultInjector:
    faults = FaultInjector(dynamodb)
    faults.fail("*", "InternalServerError", 500, times=times)
    return faults


def test_a_block_that_succeeded_returns_its_result_when_the_release_gets_no_answer(
    make_client, dynamodb, key, virtual_clock, caplog
):
    client = make_client(dynamodb, clock=virtual_clock)
    waiter = make_client(clock=virtual_clock)

    def work() -> str:
        with client.lock(key):
            failing_writes(dynamodb)  # the release's UpdateItem gets a 500 (no retries in the suite's config)
            return "done"

    with caplog.at_level(logging.DEBUG, logger="dynalock_django"):
        assert work() == "done"
    [warning] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.name == RELEASE_LOG
    assert key in warning.getMessage()
    assert "frees itself within" in warning.getMessage()
    assert client.held_leases() == []  # no longer renewed
    # The item still says held: a waiter takes it over once its lease has passed, not before.
    started = virtual_clock.monotonic()
    taken = waiter.acquire(key, timeout=5 * LEASE)
    assert LEASE <= virtual_clock.monotonic() - started <= LEASE + 1.0
    taken.release()


def test_the_lease_says_its_release_was_not_confirmed(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    with client.lock(key) as lease:
        failing_writes(dynamodb)
    assert lease.state == "released"
    assert lease.release_unconfirmed
    with client.lock(key) as confirmed:  # a release that was answered is confirmed
        pass
    assert not confirmed.release_unconfirmed


def test_a_lease_lost_during_the_block_still_raises_even_when_the_release_gets_no_answer(
    make_client, dynamodb, key, virtual_clock
):
    client = make_client(dynamodb, clock=virtual_clock)

    def work() -> None:
        with client.lock(key) as lease:
            failing_writes(dynamodb, times=-1)  # renewals fail until the lease runs out, then the release
            virtual_clock.advance(2 * LEASE)
            assert lease.state == "lost"

    # LockLost, not the release's DynamoDBUnavailable, which a caller's retry would read as "nothing ran".
    with pytest.raises(LockLost) as raised:
        work()
    assert isinstance(raised.value.__cause__, DynamoDBUnavailable)


def test_a_lease_taken_away_during_the_block_raises_lock_lost(make_client, key, virtual_clock):
    client, operator = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    with pytest.raises(LockLost), client.lock(key) as lease:
        operator.force_release(operator.get(key), released_by="an operator")
        virtual_clock.advance(LEASE)  # the next renewal finds it released
        assert lease.state == "lost"


def test_the_blocks_own_exception_wins_and_carries_the_release_failure(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    with pytest.raises(ZeroDivisionError) as raised, client.lock(key):
        failing_writes(dynamodb)
        raise ZeroDivisionError
    assert any("also failed" in note for note in raised.value.__notes__)


def test_a_group_that_succeeded_returns_and_one_with_a_lost_member_raises(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    operator = make_client(clock=virtual_clock)
    keys = [f"{key}-a", f"{key}-b"]
    with client.acquire_many(keys) as group:
        failing_writes(dynamodb, times=-1)  # the transaction, then each member's own release
    assert all(lease.release_unconfirmed for lease in group)
    fresh = make_client(clock=virtual_clock)  # its own boto3 client: no faults
    virtual_clock.advance(LEASE + 0.5)
    with pytest.raises(LockLost), fresh.acquire_many(keys) as group:
        operator.force_release(operator.get(keys[0]), released_by="an operator")
        virtual_clock.advance(LEASE)
        assert group[keys[0]].state == "lost"


def test_the_rule_for_any_release_and_for_coroutines(make_client, dynamodb, key, virtual_clock):
    import asyncio

    client = make_client(dynamodb, clock=virtual_clock)
    lease = client.acquire(key)
    failing_writes(dynamodb)
    assert isinstance(release_at_block_end(lease.release, None, [lease]), DynamoDBUnavailable)
    other = client.acquire(f"{key}-2")
    failing_writes(dynamodb)
    assert isinstance(asyncio.run(arelease_at_block_end(other.arelease, None, [other])), DynamoDBUnavailable)
    assert release_at_block_end(lambda: None, None, []) is None


def test_an_unconfirmed_release_is_counted(make_client, dynamodb, key, virtual_clock):
    telemetry = recorded()
    with described_as_their_keys():
        telemetry.reset()
        client = make_client(dynamodb, clock=virtual_clock)
        with client.lock(key):
            failing_writes(dynamodb)
        with client.lock(f"{key}-answered"):
            pass
        collected = telemetry.collect()
    assert collected.sum("dynalock.lease.release_failed", dynalock__kind=key) == 1
    assert not collected.of("dynalock.lease.release_failed", dynalock__kind=f"{key}-answered")
    assert not collected.of("dynalock.lease.lost", dynalock__kind=key)
