"""Every instrument and span of dynalock_django.dynamodb.telemetry, read with the SDK's in-memory reader and exporter.

On real stores: an uncontended acquire and release, a contended acquire (no
ERROR span), a time-out, a refused try, a lease lost by a paused holder and
its takeover, a takeover and a forced release by an operator, DynamoDB
throttling, a group, and a coroutine's acquire.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time

import pytest
from opentelemetry.trace import StatusCode

from dynalock_django.dynamodb import (
    Described,
    DynamoDBUnavailable,
    InvalidLockRequest,
    LockLost,
    LockNotAcquired,
    LockTimeout,
)
from dynalock_django.dynamodb.leases.lease import record_of

from ..dynamodb_support import LEASE, UNRENEWED, FaultInjector, RequestCounter, make_dynamodb, unique
from ..otel_support import Collected, described_as_their_keys, recorded


@pytest.fixture
def otel():
    telemetry = recorded()
    with described_as_their_keys():
        telemetry.reset()
        yield telemetry


def test_an_acquire_and_its_release_record_their_spans_durations_holding_and_requests(otel, make_client, key):
    client = make_client(**UNRENEWED)  # a renewal would be counted among the requests
    lease = client.acquire(key, timeout=5)
    during = otel.collect()
    assert during.sum("dynalock.locks.held", dynalock__kind=key) == 1
    lease.release()
    after = otel.collect()

    (acquired,) = during.of("dynalock.acquire.duration", dynalock__kind=key)
    assert acquired.attributes == {"dynalock.kind": key, "dynalock.outcome": "acquired"}
    assert acquired.value == 1
    assert 0 < acquired.total < 5
    assert during.sum("dynalock.acquire.pending", dynalock__kind=key) == 0  # +1, then -1
    assert during.sum("dynalock.requests", dynalock__operation="UpdateItem", dynalock__result="ok") == 1
    assert after.sum("dynalock.locks.held", dynalock__kind=key) == -1
    (held,) = after.of("dynalock.hold.duration", dynalock__kind=key)
    assert held.value == 1
    assert held.total > 0
    assert after.sum("dynalock.requests", dynalock__operation="UpdateItem", dynalock__result="ok") == 1
    assert not after.of("dynalock.lease.lost")

    (acquire_span,) = otel.spans("dynalock.acquire")
    assert acquire_span.attributes == {"dynalock.kind": key, "dynalock.outcome": "acquired"}
    assert acquire_span.status.status_code is StatusCode.UNSET
    (release_span,) = otel.spans("dynalock.release")
    assert release_span.attributes == {"dynalock.kind": key}
    assert release_span.status.status_code is StatusCode.UNSET


def test_contention_is_an_outcome_not_an_error(otel, make_client, key):
    holder, waiter = make_client(), make_client()
    holder.acquire(key)
    otel.reset()
    patience = 2.0

    def wait_in_vain() -> None:
        with pytest.raises(LockTimeout):
            waiter.acquire(key, timeout=patience)

    def refused(collected: Collected) -> float:
        return collected.sum("dynalock.requests", dynalock__operation="UpdateItem", dynalock__result="condition_failed")

    waiting = threading.Thread(target=wait_in_vain)
    waiting.start()
    # Read while the waiter still waits: as soon as its first write was refused with the holder's item.
    while_waiting = otel.collect_until(lambda collected: refused(collected) >= 1, within=patience / 2)
    still_waiting = waiting.is_alive()
    waiting.join()
    assert waiter.try_acquire(key) is None
    whole = Collected(while_waiting.points + otel.collect().points)

    assert refused(while_waiting) >= 1
    if still_waiting:  # a starved machine may have let the whole wait pass before the read
        assert while_waiting.sum("dynalock.acquire.pending", dynalock__kind=key) == 1
    assert whole.sum("dynalock.acquire.pending", dynalock__kind=key) == 0
    (timed_out,) = whole.of("dynalock.acquire.duration", dynalock__outcome="timeout")
    assert timed_out.attributes["dynalock.kind"] == key
    assert timed_out.total >= patience
    assert whole.of("dynalock.acquire.duration", dynalock__kind=key, dynalock__outcome="refused")[0].value == 1
    spans = otel.spans("dynalock.acquire")
    assert sorted(span.attributes["dynalock.outcome"] for span in spans) == ["refused", "timeout"]
    assert all(span.status.status_code is StatusCode.UNSET for span in spans)
    assert not any(span.events for span in spans)  # no exception recorded


def test_a_lease_lost_by_a_paused_holder_and_its_takeover(otel, make_client, key, caplog):
    holder, taker = make_client(), make_client()
    lease = holder.acquire(key)
    otel.reset()
    with record_of(lease).write_lock:  # the heartbeat cannot renew it: as if the process were stopped
        time.sleep(LEASE + 0.1)
    assert lease.wait_until_lost(timeout=5 * LEASE)
    lost = otel.collect()
    assert lost.of("dynalock.lease.lost", dynalock__kind=key)[0].attributes["dynalock.cause"] == "expired"
    assert lost.sum("dynalock.lease.lost", dynalock__kind=key) == 1
    assert lost.sum("dynalock.locks.held", dynalock__kind=key) == -1
    assert lost.of("dynalock.hold.duration", dynalock__kind=key)[0].total >= LEASE

    with caplog.at_level(logging.WARNING, logger="dynalock_django"):
        taken = taker.acquire(key, timeout=5 * LEASE)
    took = otel.collect()
    assert took.sum("dynalock.takeovers", dynalock__kind=key) == 1
    assert took.sum("dynalock.locks.held", dynalock__kind=key) == 1
    assert f"Took over {key} from a holder that stopped renewing (token {taken.fencing_token})" in caplog.messages
    (acquire_span,) = otel.spans("dynalock.acquire")
    assert [event.name for event in acquire_span.events] == ["dynalock.takeover"]
    with pytest.raises(LockLost):
        lease.release()  # the paused holder finds out: counted once, when it was lost
    assert not otel.collect().of("dynalock.lease.lost")


def test_a_lease_taken_over_and_released_since_is_lost_to_a_takeover_not_to_an_operator(otel, make_client, key):
    """The holder finds a released item, but one its taker released: the truth is a takeover."""
    holder, taker = make_client(), make_client()
    lease = holder.acquire(key)
    taker.take_over(taker.get(key)).release()
    with pytest.raises(LockLost):
        lease.extend()
    lost = otel.collect().of("dynalock.lease.lost", dynalock__kind=key)
    assert {point.attributes["dynalock.cause"]: point.value for point in lost} == {"taken_over": 1}


def test_an_operators_takeover_and_forced_release_are_causes_of_lost_leases(otel, make_client, key, caplog):
    holder, operator = make_client(), make_client()
    lease = holder.acquire(key)
    as_read = operator.get(key)
    taken = operator.take_over(as_read)
    with pytest.raises(LockLost):
        lease.extend()
    with caplog.at_level(logging.WARNING, logger="dynalock_django"):
        operator.force_release(operator.get(key), released_by="ops:carol", described=Described(key))
    with pytest.raises(LockLost):
        taken.extend()
    with pytest.raises(LockNotAcquired):
        operator.take_over(as_read)  # changed hands since it was read: refused
    collected = otel.collect()

    lost = collected.of("dynalock.lease.lost", dynalock__kind=key)
    assert {point.attributes["dynalock.cause"]: point.value for point in lost} == {
        "taken_over": 1,
        "released_by_operator": 1,
    }
    assert not collected.of("dynalock.takeovers")  # an operator's takeover is no dead holder's
    released = f"Lock {key} held by {operator.owner_name} (token {taken.fencing_token}) was force-released by ops:carol"
    assert released in caplog.messages
    takeover_spans = otel.spans("dynalock.takeover")
    assert [span.attributes.get("dynalock.outcome") for span in takeover_spans] == [None, "refused"]
    assert all(span.status.status_code is StatusCode.UNSET for span in takeover_spans)
    (forced,) = [span for span in otel.spans("dynalock.release") if span.attributes.get("dynalock.forced")]
    assert forced.attributes["dynalock.kind"] == key


def test_throttling_is_counted_and_an_unavailable_acquire_is_an_error_span(otel, make_client, endpoint_url, key):
    dynamodb = make_dynamodb(endpoint_url, retries={"mode": "standard", "total_max_attempts": 1})
    client = make_client(dynamodb)
    FaultInjector(dynamodb).fail("UpdateItem", "ProvisionedThroughputExceededException", 400, times=1)
    with pytest.raises(DynamoDBUnavailable):
        client.try_acquire(key)
    collected = otel.collect()
    assert collected.sum("dynalock.requests", dynalock__operation="UpdateItem", dynalock__result="throttled") == 1
    assert collected.of("dynalock.acquire.duration", dynalock__kind=key)[0].attributes["dynalock.outcome"] == (
        "unavailable"
    )
    (span,) = otel.spans("dynalock.acquire")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["dynalock.outcome"] == "unavailable"


def test_a_throttled_waiter_backs_off_and_each_throttled_request_is_counted_with_its_reason(
    otel, make_client, dynamodb, key, virtual_clock, monkeypatch
):
    monkeypatch.setattr(random, "uniform", lambda low, high: high)  # every pause its whole period
    holder = make_client(clock=virtual_clock, lease_duration=60.0, heartbeat_period=15.0)
    lease = holder.acquire(key)
    waiter = make_client(dynamodb, clock=virtual_clock, refresh_period=1.0)
    faults, counter = FaultInjector(dynamodb), RequestCounter(dynamodb)
    reasons = [{"reason": "TableReadKeyRangeThroughputExceeded", "resource": "arn:aws:dynamodb:::table/t"}]
    faults.fail("GetItem", "ProvisionedThroughputExceededException", 400, times=-1, ThrottlingReasons=reasons)

    def wait() -> None:
        with pytest.raises(DynamoDBUnavailable):  # what failed last ends a wait that saw nothing else
            waiter.acquire(key, timeout=10.0)

    thread = threading.Thread(target=wait)
    virtual_clock.follow(thread)
    thread.start()
    while thread.is_alive():
        virtual_clock.advance(1.0)
    lease.release()

    # The head of the line would read every 0.1 s (100 reads in 10 s); throttled, it backs off, doubling
    # its pause from 0.2 s up to the rare look's 2 s, anew after each refresh of its entry (a write,
    # answered, every 2 s): 0.2 + 0.4 + 0.8 + ... three or four reads in 2 s.
    assert counter.calls["GetItem"] <= 20
    counted = otel.collect().of("dynalock.requests", dynalock__operation="GetItem", dynalock__result="throttled")
    assert {point.attributes["dynalock.reason"] for point in counted} == {"TableReadKeyRangeThroughputExceeded"}
    assert sum(point.value for point in counted) == counter.calls["GetItem"]


@pytest.mark.requires("transactions")  # without, its keys are released one by one: a span each, nested
def test_a_group_acquire_is_one_span_for_all_its_keys_described_once(otel, make_client, key):
    client = make_client()
    keys = [f"{key}-a", f"{key}-b"]
    group = client.acquire_many(keys, timeout=5, described=Described(key, model="desk.customer"))
    group.release()
    collected = otel.collect()
    (span,) = otel.spans("dynalock.acquire_many")
    assert span.attributes == {
        "dynalock.kind": key,
        "dynalock.model": "desk.customer",
        "dynalock.lock_count": 2,
        "dynalock.outcome": "acquired",
    }
    assert collected.sum("dynalock.locks.held", dynalock__kind=key) == 0
    assert [p.value for p in collected.of("dynalock.hold.duration", dynalock__kind=key)] == [2]
    (release,) = otel.spans("dynalock.release")
    assert release.attributes == {"dynalock.kind": key, "dynalock.model": "desk.customer", "dynalock.lock_count": 2}


def test_a_coroutines_acquire_has_its_span_and_outcome(otel, make_client, key):
    client = make_client(**UNRENEWED)  # a renewal would be counted among the requests (the first asyncio.run is slow)

    async def hold() -> None:
        lease = await client.aacquire(key, timeout=5)
        await lease.arelease()

    asyncio.run(hold())
    (span,) = otel.spans("dynalock.acquire")
    assert span.attributes == {"dynalock.kind": key, "dynalock.outcome": "acquired"}
    assert otel.collect().sum("dynalock.requests", dynalock__operation="UpdateItem", dynalock__result="ok") == 2


def test_an_undescribed_lock_is_named_by_nothing_and_a_counted_one_by_its_kind(make_client):
    otel = recorded()  # no description by key for this test
    otel.reset()
    client = make_client()
    client.acquire(unique()).release()
    client.semaphore(unique(), 2).acquire().release()
    described = client.readers_writer(unique(), described=Described("object", model="desk.report"))
    described.acquire_read().release()
    described.acquire_write().release()
    spans = [dict(span.attributes) for span in otel.spans("dynalock.acquire")]  # a permit's round has none
    assert spans == [
        {"dynalock.outcome": "acquired"},
        {"dynalock.kind": "object", "dynalock.model": "desk.report", "dynalock.outcome": "acquired"},
    ]
    held = [point.attributes for point in otel.collect().of("dynalock.hold.duration")]
    assert sorted(held, key=str) == sorted(
        [
            {},
            {"dynalock.kind": "semaphore"},
            {"dynalock.kind": "read", "dynalock.model": "desk.report"},
            {"dynalock.kind": "object", "dynalock.model": "desk.report"},
        ],
        key=str,
    )


def test_a_description_that_is_no_described_is_refused_naming_the_fix(make_client):
    with pytest.raises(InvalidLockRequest, match=r"described= takes a Described"):
        make_client().try_acquire(unique(), described={"dynalock.kind": "object"})


@pytest.mark.parametrize(
    ("name", "new_place"),
    [
        ("describe_keys_with", r"described=Described\(kind"),
        ("task_skipped", r"dynalock_django\.counters\.task_skipped"),
        ("idempotency_answered", r"dynalock_django\.counters\.idempotency_answered"),
    ],
)
def test_names_the_protocol_no_longer_exports_still_import_with_a_warning_naming_the_new_way(name, new_place):
    import dynalock_django.dynamodb as protocol

    with pytest.warns(DeprecationWarning, match=new_place):
        deprecated = getattr(protocol, name)
    assert deprecated("x") is None
    assert name not in protocol.__all__
    with pytest.raises(AttributeError, match="no attribute 'lock_everything'"):
        protocol.lock_everything  # noqa: B018


def test_a_reader_kept_out_by_a_writer_for_over_a_lease_takes_a_released_permit_as_no_takeover(
    otel, make_client, key, virtual_clock, caplog
):
    """What the waiter saw of a permit ends when it reads the permit released: no stale "Took over", no count."""
    holder, waiter, writer = (make_client(clock=virtual_clock).readers_writer(key, max_readers=1) for _ in range(3))
    reading = holder.acquire_read(timeout=0)
    assert waiter.try_acquire_read() is None  # the one permit held: the waiter saw its holder
    reading.release()
    writing = writer.acquire_write(timeout=0)
    for _ in range(4):  # the writer keeps the waiter out for two leases; the permit stays released
        virtual_clock.advance(LEASE / 2)
        assert waiter.try_acquire_read() is None
    writing.release()
    otel.collect()
    with caplog.at_level(logging.INFO, logger="dynalock_django"):
        assert waiter.try_acquire_read() is not None
    assert not otel.collect().of("dynalock.takeovers")
    assert not [message for message in caplog.messages if message.startswith("Took over")]
