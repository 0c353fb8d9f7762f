"""Semaphores: at most N holders of one name, each permit a single lock with its own lease and token."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import InvalidLockRequest, LockTimeout

from ...dynamodb_support import LEASE, RequestCounter


def test_n_holders_at_most_and_the_next_gets_a_released_permit(make_client, key, virtual_clock):
    clients = [make_client(clock=virtual_clock) for _ in range(4)]
    leases = [client.semaphore(key, 3).acquire(timeout=0) for client in clients[:3]]
    assert sorted(lease.permit for lease in leases) == [0, 1, 2]
    with pytest.raises(LockTimeout, match="all 3 permits held"):
        clients[3].semaphore(key, 3).acquire(timeout=5 * LEASE)
    leases[1].release()
    lease = clients[3].semaphore(key, 3).acquire(timeout=5 * LEASE)
    assert lease.permit == leases[1].permit
    assert lease.fencing_token > leases[1].fencing_token
    assert len(clients[0].semaphore(key, 3).holders()) == 3


def test_a_different_count_is_refused_naming_both(make_client, key):
    client = make_client()
    client.semaphore(key, 3).acquire(timeout=0)
    with pytest.raises(InvalidLockRequest, match=r"has 3 permits .* asks for 2"):
        client.semaphore(key, 2).acquire(timeout=0)


def test_free_permit_costs_one_read_and_one_write(make_client, dynamodb, key):
    client = make_client(dynamodb)
    counter = RequestCounter(dynamodb)
    lease = client.semaphore(key, 5).acquire(timeout=1)
    assert dict(counter.calls) == {"BatchGetItem": 1, "UpdateItem": 1}
    counter.reset()
    lease.release()
    assert dict(counter.calls) == {"UpdateItem": 1}
