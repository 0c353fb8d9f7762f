"""Semaphores: at most N holders of one name, each permit a single lock with its own lease and fencing token.

On the in-process store and the virtual clock: the timing rules (a dead holder's permit taken
after exactly one lease) in virtual seconds, whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import collections
import re
import threading

import pytest

from dynalock_django.dynamodb import (
    MAX_PERMITS,
    MAX_READERS,
    DynamoDBUnavailable,
    InvalidLockRequest,
    LockTimeout,
    split_permit_key,
)

from ...docs_site import DOCS
from ...dynamodb_support import LEASE, PATIENCE, FaultInjector, RequestCounter, wait_for
from ..clocks import TICK


def test_n_holders_at_most_and_the_next_gets_a_released_permit(make_client, key, virtual_clock):
    clients = [make_client(clock=virtual_clock) for _ in range(4)]
    leases = [client.semaphore(key, 3).acquire(timeout=0) for client in clients[:3]]
    assert sorted(lease.permit for lease in leases) == [0, 1, 2]
    with pytest.raises(LockTimeout, match="all 3 permits held") as timed_out:
        clients[3].semaphore(key, 3).acquire(timeout=2 * LEASE)  # two leases: the holders keep renewing
    assert len(timed_out.value.holders) == 3
    assert all(lease.is_held() for lease in leases)
    leases[1].release()
    lease = clients[3].semaphore(key, 3).acquire(timeout=2 * LEASE)
    assert lease.permit == leases[1].permit
    assert lease.fencing_token > leases[1].fencing_token
    assert sorted(holder.permit for holder in clients[0].semaphore(key, 3).holders()) == [0, 1, 2]


def test_a_waiter_gets_the_permit_released_while_it_waits(make_client, key, virtual_clock):
    holder, waiter = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    held = holder.semaphore(key, 1).acquire(timeout=0)
    got = []
    thread = threading.Thread(target=lambda: got.append(waiter.semaphore(key, 1).acquire(timeout=60 * LEASE)))
    virtual_clock.follow(thread)
    thread.start()
    virtual_clock.advance(3 * LEASE)  # it waits: the holder renews
    assert got == []
    held.release()
    virtual_clock.advance(LEASE)  # its next poll, at most refresh_period away, finds the permit free
    thread.join(5)
    assert [lease.permit for lease in got] == [0]
    assert got[0].fencing_token > held.fencing_token


def test_a_dead_holders_permit_is_taken_after_exactly_one_lease_of_our_clock(make_client, key, virtual_clock):
    alive, dead, waiter = (make_client(clock=virtual_clock) for _ in range(3))
    kept = alive.semaphore(key, 2).acquire(timeout=0)
    lost = dead.semaphore(key, 2).acquire(timeout=0)
    dead.close(release=False)  # stops renewing: a crash
    semaphore = waiter.semaphore(key, 2)
    assert semaphore.try_acquire() is None  # first sight of the dead permit's version
    virtual_clock.advance(LEASE - TICK)
    assert semaphore.try_acquire() is None
    virtual_clock.advance(TICK)
    taken = semaphore.try_acquire()
    assert taken is not None
    assert taken.permit == lost.permit
    assert taken.fencing_token > lost.fencing_token
    assert kept.is_held()  # the heartbeating holder's permit is never taken


def test_tokens_strictly_increase_per_permit(make_client, key):
    clients = [make_client() for _ in range(3)]
    tokens: dict[int, list[int]] = collections.defaultdict(list)
    for round_ in range(8):
        leases = [client.semaphore(key, 2).try_acquire() for client in clients[round_ % 3 :] + clients[: round_ % 3]]
        won = [lease for lease in leases if lease is not None]
        assert len(won) == 2  # never three, never fewer than two free permits taken
        for lease in won:
            tokens[lease.permit].append(lease.fencing_token)
            lease.release()
    assert set(tokens) == {0, 1}
    for issued in tokens.values():
        assert issued == sorted(set(issued))  # strictly increasing


def test_a_permit_write_whose_answer_was_lost_is_recovered_by_the_next_write(make_client, dynamodb, key):
    client = make_client(dynamodb)
    FaultInjector(dynamodb).lose_response("UpdateItem")  # it landed; the answer is lost
    counter = RequestCounter(dynamodb)
    lease = client.semaphore(key, 3).acquire(timeout=5 * LEASE)
    assert counter.calls["UpdateItem"] == 2  # the next write to the same permit found it ours
    held = [holder for holder in client.semaphore(key, 3).holders()]
    assert [(holder.permit, holder.lock.record_version_number) for holder in held] == [
        (lease.permit, lease.record_version_number)
    ]  # one permit taken, not two
    lease.release()


def test_a_try_whose_answer_was_lost_resolves_it_with_one_more_write(make_client, dynamodb, key):
    client = make_client(dynamodb)
    FaultInjector(dynamodb).lose_response("UpdateItem", timed_out=False)  # answered at once, as a closed connection
    lease = client.semaphore(key, 2).try_acquire()
    assert lease is not None
    assert [holder.permit for holder in client.semaphore(key, 2).holders()] == [lease.permit]
    lease.release()


def test_a_try_that_cannot_tell_raises(make_client, dynamodb, key):
    client = make_client(dynamodb)
    FaultInjector(dynamodb).fail("BatchGetItem", "InternalServerError", 500, times=10)
    with pytest.raises(DynamoDBUnavailable):
        client.semaphore(key, 2).try_acquire()


def test_a_different_count_is_refused_naming_both(make_client, key):
    client = make_client()
    client.semaphore(key, 3).acquire(timeout=0)
    with pytest.raises(InvalidLockRequest, match=r"has 3 permits .* asks for 2\. .*new name"):
        client.semaphore(key, 2).acquire(timeout=0)
    with pytest.raises(InvalidLockRequest, match=r"has 3 permits .* asks for 5"):
        client.semaphore(key, 5).try_acquire()


def test_a_smaller_count_sees_a_larger_set_past_its_last_permit(make_client, key):
    client = make_client(delete_on_release=True)
    semaphore = client.semaphore(key, 3)
    leases = [semaphore.acquire(timeout=0) for _ in range(3)]
    for lease in leases:
        if lease.permit != 2:
            lease.release()  # deleted: only permit 2's item is left, past the last permit of a set of 2
    assert [holder.permit for holder in semaphore.holders()] == [2]
    with pytest.raises(InvalidLockRequest, match=r"has 3 permits .* asks for 2"):
        client.semaphore(key, 2).try_acquire()


@pytest.mark.parametrize(
    ("name", "count", "problem"),
    [
        ("", 2, "non-empty"),
        ("x", 0, "from 1 to 99"),
        ("x", 100, "from 1 to 99"),
        ("x", True, "from 1 to 99"),
        ("x#permit-3", 2, "must not end like a permit"),
        ("x" * 2040, 2, "bytes in UTF-8"),
    ],
)
def test_bad_names_and_counts_are_refused_with_the_fix(make_client, name, count, problem):
    with pytest.raises(InvalidLockRequest, match=problem):
        make_client().semaphore(name, count)


def test_the_documented_largest_counts_are_the_codes_and_each_set_is_read_in_one_request(make_client, dynamodb, key):
    """The docs' "1 to N" is MAX_PERMITS, and the largest set and reader set still fit one BatchGetItem (100 keys)."""
    for page in ("django/semaphores.md", "django/tasks.md"):
        assert re.findall(r"whole number from 1 to (\d+)", (DOCS / page).read_text()) == [str(MAX_PERMITS)], page
    protocol = (DOCS / "protocol.md").read_text()
    assert f"`MAX_PERMITS` ({MAX_PERMITS}:" in protocol
    assert f"`MAX_READERS`, {MAX_READERS})" in protocol
    client = make_client(dynamodb)
    counter = RequestCounter(dynamodb)
    assert client.semaphore(key, MAX_PERMITS).try_acquire() is not None
    assert client.readers_writer(key + "-rw", max_readers=MAX_READERS).try_acquire_read() is not None
    assert counter.calls["BatchGetItem"] == 2
    with pytest.raises(InvalidLockRequest, match=f"from 1 to {MAX_PERMITS}"):
        client.semaphore(key, MAX_PERMITS + 1)
    with pytest.raises(InvalidLockRequest, match=f"from 1 to {MAX_READERS}"):
        client.readers_writer(key, max_readers=MAX_READERS + 1)


def test_permit_keys_decode_to_their_set():
    assert split_permit_key("exports#permit-2") == ("exports", "semaphore", 2)
    assert split_permit_key("a#permit-1#reader-0") == ("a#permit-1", "read", 0)
    assert split_permit_key("exports") is None
    assert split_permit_key("exports#permit-02") is None  # not one the set writes


def test_try_acquire_never_waits_and_reads_once_when_all_are_held(make_client, dynamodb, key):
    make_client().semaphore(key, 2).acquire(timeout=0)
    make_client().semaphore(key, 2).acquire(timeout=0)
    counter = RequestCounter(dynamodb)
    assert make_client(dynamodb).semaphore(key, 2).try_acquire() is None
    assert dict(counter.calls) == {"BatchGetItem": 1}


def test_request_counts(make_client, dynamodb, key):
    """A free permit: one read of the set and one write; a release: one write (docs/protocol.md's table)."""
    client = make_client(dynamodb)
    counter = RequestCounter(dynamodb)
    lease = client.semaphore(key, 5).acquire(timeout=1)
    assert dict(counter.calls) == {"BatchGetItem": 1, "UpdateItem": 1}
    counter.reset()
    lease.release()
    assert dict(counter.calls) == {"UpdateItem": 1}


def test_the_permit_item_is_a_lock_item_with_its_count(make_client, key):
    client = make_client()
    lease = client.semaphore(key, 4).acquire(timeout=0)
    stored = client.get(f"{key}#permit-{lease.permit}")
    assert (stored.owner_name, stored.fencing_token, stored.permits) == (client.owner_name, lease.fencing_token, 4)
    assert stored.lease_duration == LEASE
    lease.release()
    assert client.get(f"{key}#permit-{lease.permit}").permits == 4  # kept on release, with the token


def test_aacquire_waits_on_the_event_loop_and_atry_acquire_does_not(make_client, key, virtual_clock):
    holder, waiter = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    held = holder.semaphore(key, 1).acquire(timeout=0)
    semaphore = waiter.semaphore(key, 1)

    async def main() -> None:
        assert await semaphore.atry_acquire() is None
        with pytest.raises(LockTimeout):
            await semaphore.aacquire(timeout=2 * LEASE)
        held.release()
        lease = await semaphore.aacquire(timeout=3 * LEASE)
        assert lease.permit == 0
        assert [holder.permit for holder in await semaphore.aholders()] == [0]
        await lease.arelease()

    asyncio.run(main())


def test_a_permit_won_as_its_aacquire_is_cancelled_is_released(make_client, dynamodb, key, virtual_clock):
    holder, waiter = make_client(clock=virtual_clock), make_client(dynamodb, clock=virtual_clock)
    held = holder.semaphore(key, 1).acquire(timeout=0)
    counter = RequestCounter(dynamodb)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.create_task(waiter.semaphore(key, 1).aacquire(timeout=30 * LEASE))

        # The caller is cancelled while its write, which wins the permit, is on the way.
        def cancel(**_: object) -> None:  # a before-send hook answers for the request if it returns anything
            loop.call_soon_threadsafe(task.cancel)

        dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", cancel)
        await asyncio.sleep(0.05)  # the waiter polls
        held.release()
        with pytest.raises(asyncio.CancelledError):
            await task
        dynamodb.meta.events.unregister("before-send.dynamodb.UpdateItem", cancel)

    asyncio.run(main())
    # The winning write, then its release on the call thread that won it.
    wait_for(lambda: counter.calls["UpdateItem"] >= 2 and not holder.semaphore(key, 1).holders(), PATIENCE)
    stored = holder.get(f"{key}#permit-0")
    assert stored.owner_name == waiter.owner_name  # the cancelled caller had won it
    assert stored.is_released
    assert waiter.held_leases() == []
