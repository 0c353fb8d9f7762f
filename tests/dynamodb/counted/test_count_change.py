"""A semaphore's count changed between deploys: refused while a permit of the other count is held, then taken over.

On the in-process store and the virtual clock (a holder that stopped renewing is waited out in virtual seconds).
"""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import CountInUse

from ...dynamodb_support import LEASE, make_dynamodb

TICK = 2.0**-10  # a step of the virtual clock exact in binary: a lease less a tick is not a lease


def stored_counts(client, key, count):
    return {index: (info.permits if (info := client.get(f"{key}#permit-{index}")) else None) for index in range(count)}


def test_a_larger_count_takes_over_once_the_old_permits_are_released(make_client, key, virtual_clock):
    old, new = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    held = [old.semaphore(key, 2).acquire(timeout=0) for _ in range(2)]
    with pytest.raises(CountInUse, match=r"has 2 permits .*held.* asks for 3") as refused:
        new.semaphore(key, 3).try_acquire()
    assert refused.value.holder is not None
    assert refused.value.holder.permits == 2
    held[0].release()
    with pytest.raises(CountInUse):  # one of the old count still holds: the new count waits for it
        new.semaphore(key, 3).acquire(timeout=0)
    held[1].release()
    leases = [new.semaphore(key, 3).acquire(timeout=0) for _ in range(3)]  # released permits of 2 no longer block
    assert sorted(lease.permit for lease in leases) == [0, 1, 2]
    assert stored_counts(new, key, 3) == {0: 3, 1: 3, 2: 3}
    assert new.semaphore(key, 3).try_acquire() is None  # three at most
    with pytest.raises(CountInUse, match=r"has 3 permits .*asks for 2"):  # and the old count is refused in turn
        old.semaphore(key, 2).try_acquire()


def test_a_smaller_count_takes_over_once_the_old_permits_are_released(make_client, key, virtual_clock):
    old, new = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    held = [old.semaphore(key, 3).acquire(timeout=0) for _ in range(3)]
    for lease in held[:2]:
        lease.release()
    with pytest.raises(CountInUse, match=r"has 3 permits"):  # permit 2 (past a set of 2's last) is held
        new.semaphore(key, 2).acquire(timeout=0)
    held[2].release()
    leases = [new.semaphore(key, 2).acquire(timeout=0) for _ in range(2)]
    assert sorted(lease.permit for lease in leases) == [0, 1]
    assert new.semaphore(key, 2).try_acquire() is None  # the released permit 2 of the old count is not ours
    assert all(lease.is_held() for lease in leases)


def test_a_silent_holder_of_the_old_count_is_waited_out_for_one_lease(make_client, key, virtual_clock):
    dead, new = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    lost = dead.semaphore(key, 2).acquire(timeout=0)
    dead.close(release=False)  # stops renewing: a crash, or a worker of the old deploy killed
    semaphore = new.semaphore(key, 3)
    with pytest.raises(CountInUse):
        semaphore.try_acquire()  # first sight of its version
    virtual_clock.advance(LEASE - TICK)
    with pytest.raises(CountInUse):
        semaphore.try_acquire()
    virtual_clock.advance(TICK)
    taken = [semaphore.try_acquire() for _ in range(3)]
    assert all(lease is not None for lease in taken)
    assert max(lease.fencing_token for lease in taken if lease is not None) > lost.fencing_token


def test_the_names_plain_lock_and_its_permits_exclude_each_other_both_ways(make_client, key, virtual_clock):
    plain, counted = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    semaphore = counted.semaphore(key, 2, name_lock=True)
    run = plain.acquire(key, timeout=0)  # limit=1 deployed first
    plain.exclude_permits(run)  # no permit ever: no mark, nothing to do
    with pytest.raises(CountInUse, match=r"has 1 \(its name's plain lock\).* asks for 2") as refused:
        semaphore.try_acquire()
    assert refused.value.holder is not None
    assert refused.value.holder.owner_name == run.owner_name
    run.release()
    permit = semaphore.acquire(timeout=0)  # takes over once the plain lock is released
    assert plain.get(key).marked_count == 2  # the permit marked the name: its next holder reads the permits
    again = plain.acquire(key, timeout=0)  # the grant cannot see the permit: its holder must look
    with pytest.raises(CountInUse, match="held") as refused:
        plain.exclude_permits(again)
    assert refused.value.holder is not None
    assert refused.value.holder.key == f"{key}#permit-{permit.permit}"
    assert not again.is_held()  # let go: the permit's run goes on alone
    assert plain.get(key).is_released
    permit.release()
    last = plain.acquire(key, timeout=0)
    plain.exclude_permits(last)  # every permit shut, the mark taken off
    assert plain.get(key).marked_count is None
    with pytest.raises(CountInUse):
        semaphore.try_acquire()
    last.release()
    assert semaphore.try_acquire() is not None


def test_a_permit_round_that_read_the_name_free_is_refused_after_its_holder_shuts_the_permits(
    make_client, endpoint_url, key, virtual_clock
):
    counted_dynamodb = make_dynamodb(endpoint_url)
    plain, counted = make_client(clock=virtual_clock), make_client(counted_dynamodb, clock=virtual_clock)
    semaphore = counted.semaphore(key, 2, name_lock=True)
    semaphore.acquire(timeout=0).release()  # the name carries the mark from now on: a permit writes no mark
    grants = []

    def plain_run_in_between(**_: object) -> None:
        if not grants:  # after the round's read, before its permit write: the name is granted and shut
            grants.append(plain.acquire(key, timeout=0))
            plain.exclude_permits(grants[0])

    counted_dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", plain_run_in_between)
    assert semaphore.try_acquire() is None  # its write met a shut permit
    assert len(grants) == 1
    with pytest.raises(CountInUse, match=r"plain lock"):  # and its next round finds the name held
        semaphore.try_acquire()
    assert grants[0].is_held()
    assert semaphore.holders() == []
