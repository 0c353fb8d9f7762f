"""``with idempotency(key) as attempt``: on the in-process store and virtual clock, with other processes' clients."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from dynalock_django import IdempotencyKeyInUse, IdempotencyKeyReused, LockLost, idempotency
from dynalock_django.client import client_replaced_by, get_client
from dynalock_django.testing import LocksInMemory, locks_in_memory

from ...dynamodb_support import RequestCounter

pytestmark = pytest.mark.django_db

LEASE = 10.0
REFRESH = 1.0


@pytest.fixture
def memory() -> Iterator[LocksInMemory]:
    with locks_in_memory(LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=2.5, REFRESH_PERIOD=REFRESH) as memory:
        yield memory


def test_a_completed_key_replays_its_result_without_running(memory: LocksInMemory) -> None:
    with idempotency("order-7", fingerprint="f") as attempt:
        assert not attempt.replayed
        assert attempt.lease is not None
        assert attempt.lease.is_held()
        assert attempt.complete({"id": 7, "items": [1, 2]})
    with idempotency("order-7", fingerprint="f") as again:
        assert again.replayed
        assert again.result == {"id": 7, "items": [1, 2]}
    with idempotency("raw", fingerprint="f") as attempt:
        attempt.complete(b"\x00\xff")
    with idempotency("raw", fingerprint="f") as again:
        assert again.result == b"\x00\xff"
    with pytest.raises(IdempotencyKeyReused), idempotency("order-7", fingerprint="other"):
        pass


def test_a_block_that_raises_or_keeps_nothing_frees_the_key(memory: LocksInMemory) -> None:
    with pytest.raises(RuntimeError), idempotency("k") as attempt:
        raise RuntimeError("failed half-way")
    with idempotency("k") as attempt:
        assert not attempt.replayed  # runs again
    with idempotency("k") as attempt:
        assert not attempt.replayed


def test_a_first_run_for_ten_leases_is_never_run_twice(memory: LocksInMemory) -> None:
    """Its heartbeat renews it on the virtual clock; another process's duplicates, one per lease, are all 409."""
    runs = 0
    other = memory.new_client()
    with idempotency("long", fingerprint="f") as attempt:
        runs += 1
        for _ in range(10):
            memory.advance(LEASE)
            with (
                client_replaced_by(other),
                pytest.raises(IdempotencyKeyInUse) as in_use,
                idempotency("long", fingerprint="f"),
            ):
                runs += 1
            assert 1 <= in_use.value.retry_after <= LEASE
        assert attempt.complete("done")
    assert runs == 1
    with client_replaced_by(other), idempotency("long", fingerprint="f") as again:
        assert again.result == "done"


def test_a_dead_first_run_frees_the_key_within_a_lease_and_the_next_duplicate_runs_once(
    memory: LocksInMemory,
) -> None:
    first, second = memory.new_client(), memory.new_client()
    with client_replaced_by(first):
        idempotency("pay", fingerprint="f").__enter__()  # and then its process dies: no release, no renewal
    first.close(release=False)
    runs = 0
    with client_replaced_by(second):
        with pytest.raises(IdempotencyKeyInUse) as in_use, idempotency("pay", fingerprint="f"):
            runs += 1
        assert in_use.value.retry_after <= LEASE
        memory.advance(LEASE + REFRESH)  # one lease (as this process saw it) and one refresh
        with idempotency("pay", fingerprint="f") as attempt:
            assert not attempt.replayed
            runs += 1
            attempt.complete("paid once")
        with idempotency("pay", fingerprint="f") as again:
            assert again.result == "paid once"
    assert runs == 1


def test_a_completion_by_a_run_that_lost_its_lock_is_refused(memory: LocksInMemory) -> None:
    operator = memory.new_client()
    with pytest.raises(LockLost), idempotency("k", fingerprint="f") as attempt:
        assert attempt.lease is not None
        key = attempt.lease.key
        operator.take_over(operator.get(key))  # type: ignore[arg-type]
        attempt.complete("late")
    assert get_client().get_record(key) is None


def test_async_with_and_acomplete(memory: LocksInMemory) -> None:
    async def twice() -> list[object]:
        async with idempotency("a", fingerprint="f") as attempt:
            await attempt.acomplete([1])
        async with idempotency("a", fingerprint="f") as again:
            return [again.replayed, again.result]

    assert asyncio.run(twice()) == [True, [1]]


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (lambda: idempotency(""), "non-empty string"),
        (lambda: idempotency("k", ttl=0), "ttl"),
        (lambda: idempotency("k", fingerprint=1), "fingerprint"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_name_the_fix(memory: LocksInMemory, call: object, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        call()  # type: ignore[operator]


def test_a_result_that_is_neither_json_nor_bytes_is_refused_and_the_key_freed(memory: LocksInMemory) -> None:
    with pytest.raises(ValueError, match="JSON-serialisable or bytes"), idempotency("k") as attempt:
        attempt.complete(object())
    with idempotency("k") as attempt:
        assert not attempt.replayed


def test_what_a_first_run_a_replay_and_a_conflict_cost(memory: LocksInMemory) -> None:
    counted = RequestCounter(memory.client.dynamodb)
    with idempotency("c", fingerprint="f") as attempt:
        other = memory.new_client()
        counted_other = RequestCounter(other.dynamodb)
        with client_replaced_by(other), pytest.raises(IdempotencyKeyInUse), idempotency("c", fingerprint="f"):
            pass
        attempt.complete("x")
    assert counted.calls == {"GetItem": 2, "UpdateItem": 1, "TransactWriteItems": 1}  # 2 writes
    assert counted_other.calls == {"GetItem": 1, "UpdateItem": 1}  # the refused grant says who holds it
    counted.reset()
    with idempotency("c", fingerprint="f") as again:
        assert again.replayed
    assert counted.calls == {"GetItem": 1}
