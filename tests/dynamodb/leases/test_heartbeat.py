"""Background renewal, loss detection and its reporting, against a real endpoint.

Its timing rules (when a renewal is due, the backoff after a failure, when a lease runs out)
are in test_heartbeat_schedule.py, on a fake clock; here only bounds in the safe direction.
"""

from __future__ import annotations

import threading
import time

import pytest

from dynalock_django.dynamodb import LockLost

from ...dynamodb_support import HEARTBEAT, LEASE, PATIENCE, FaultInjector, RequestCounter, stored_and_own_version


def test_heartbeat_renews_at_most_once_per_period_with_a_new_version(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    lease = client.acquire(key)
    counter = RequestCounter(dynamodb)
    versions = {lease.record_version_number}
    for _ in range(8):
        virtual_clock.advance(HEARTBEAT / 2)
        versions.add(client.get(key).record_version_number)
    renewals = counter.renewals["UpdateItem"]
    assert counter.calls["UpdateItem"] == 0  # the reads between were the test's: every write was a renewal
    assert 3 <= renewals <= 4 + 1  # four periods passed: one renewal each, give or take the jitter
    assert len(versions) >= renewals  # each renewal wrote a fresh version
    assert lease.is_held()
    assert 0 < lease.remaining() <= LEASE
    lease.release()


def test_lease_outlives_its_duration_while_renewed(make_client, key, virtual_clock):
    client = make_client(clock=virtual_clock)
    lease = client.acquire(key)
    virtual_clock.advance(10 * LEASE)
    assert lease.is_held()
    stored, own = stored_and_own_version(client, lease)
    assert stored == own
    lease.release()


def test_lock_taken_away_is_reported_lost_at_the_next_renewal(make_client, key):
    client, operator = make_client(), make_client()
    lost = threading.Event()
    seen: list[str] = []
    lease = client.acquire(key, on_lost=lambda lease: (seen.append(lease.lost_reason), lost.set()))
    operator.force_release(operator.get(key), released_by="alice (support)")
    assert lost.wait(PATIENCE)
    assert lease.wait_until_lost(0)
    assert not lease.is_held()
    assert "released by alice (support)" in seen[0]
    assert lease.lost_to.released_by == "alice (support)"
    with pytest.raises(LockLost):
        lease.release()


def test_transient_errors_are_retried_without_losing_the_lease(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    faults = FaultInjector(dynamodb)
    lease = client.acquire(key)
    # Three renewals in a row are throttled, then DynamoDB recovers: the retries come within the lease.
    faults.fail("UpdateItem", "ThrottlingException", 400, times=3)
    virtual_clock.advance(2 * LEASE)
    assert faults.injected["UpdateItem"] == 3
    assert lease.is_held()
    stored, own = stored_and_own_version(client, lease)
    assert stored == own
    lease.release()


def test_a_lease_that_cannot_be_renewed_is_lost_when_its_safe_time_ends(make_client, dynamodb, key):
    # The heartbeat's own retries: the failed renewals would open the circuit breaker, which then refuses
    # the release below at once for its cool-down (that rule is test_breaker.py's and test_bad_day.py's).
    client = make_client(dynamodb, breaker_threshold=None)
    faults = FaultInjector(dynamodb)
    acquired = time.monotonic()  # the lease counts from the start of its write (a GC pause may follow)
    lease = client.acquire(key)
    faults.fail("UpdateItem", "InternalServerError", 500, times=-1)
    assert lease.wait_until_lost(LEASE + PATIENCE)
    assert time.monotonic() - acquired >= LEASE  # renewals were retried for the whole lease
    assert not lease.is_held()
    assert "ran out" in lease.lost_reason
    assert "InternalServerError" in lease.lost_reason
    faults.clear()
    # Nobody took it meanwhile, so the release still frees it.
    assert lease.release() is True


def test_a_failing_callback_does_not_stop_other_leases(make_client, key, virtual_clock):
    client, operator = make_client(clock=virtual_clock), make_client(clock=virtual_clock)

    def broken(lease):
        raise RuntimeError("callback bug")

    first = client.acquire(key, on_lost=broken)
    second = client.acquire(key + "-2")
    operator.force_release(operator.get(key), released_by="test")
    assert first.wait_until_lost(PATIENCE)
    virtual_clock.advance(2 * LEASE)
    assert second.is_held()
    second.release()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the death is the test's
def test_a_heartbeat_thread_that_died_runs_again_at_the_next_grant(make_client, key, virtual_clock, monkeypatch):
    """A thread killed outright (no Exception its loop outlives) is replaced at the next grant: no lease runs out."""
    client = make_client(clock=virtual_clock)
    heartbeat = client.process_state.heartbeat
    beat, deaths = heartbeat.beat, [SystemExit("killed")]

    def beat_or_die() -> float:
        if deaths:
            raise deaths.pop()
        return beat()

    monkeypatch.setattr(heartbeat, "beat", beat_or_die)
    first = client.acquire(key)  # starts the thread, which dies at its first look
    for _ in range(int(PATIENCE / 0.01)):
        if not heartbeat.is_alive():
            break
        time.sleep(0.01)
    assert not heartbeat.is_alive()
    second = client.acquire(key + "-2")
    virtual_clock.advance(10 * LEASE)
    assert first.is_held()
    assert second.is_held()
    first.release()
    second.release()


def test_manual_extend_renews_and_can_change_the_lease(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key)
    before = lease.record_version_number
    lease.extend(lease_duration=2 * LEASE)
    assert lease.record_version_number != before
    assert client.get(key).lease_duration == 2 * LEASE
    assert lease.remaining() > LEASE
    lease.release()


def test_callback_added_after_loss_runs_at_once(make_client, key):
    client, operator = make_client(), make_client()
    lease = client.acquire(key)
    operator.force_release(operator.get(key), released_by="test")
    assert lease.wait_until_lost(PATIENCE)
    called = []
    lease.add_lost_callback(called.append)
    assert called == [lease]
