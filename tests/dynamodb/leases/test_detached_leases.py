"""Detached leases (keep_alive=False): held by a remote owner that renews through whichever client answers."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable, LockLost

from ...dynamodb_support import HEARTBEAT, LEASE, FaultInjector, RequestCounter, make_dynamodb
from ..aws.test_faults import RETRYING_BOTOCORE

TAB = "django-user:7/tab:first"


def detach(client, key, **options):
    """Grant ``key`` to the browser tab TAB, as the server that showed the page would."""
    return client.acquire(key, owner_name=TAB, keep_alive=False, **options)


def test_a_detached_lease_is_granted_to_its_owner_with_its_own_lease(make_client, key):
    client = make_client()
    lease = detach(client, key, lease_duration=3 * LEASE, data=b"tab")
    stored = client.get(key)
    assert not lease.keep_alive
    assert (lease.owner_name, lease.lease_duration) == (TAB, 3 * LEASE)
    assert (stored.owner_name, stored.lease_duration, stored.data) == (TAB, 3 * LEASE, b"tab")
    assert stored.fencing_token == lease.fencing_token
    assert client.held_leases() == []


def test_the_heartbeat_does_not_renew_a_detached_lease(make_client, key, virtual_clock):
    client, waiter = make_client(clock=virtual_clock), make_client(clock=virtual_clock)
    kept = client.acquire(key + "-kept")  # the heartbeat runs, for this lease only
    kept_version = kept.record_version_number
    lease = detach(client, key)
    virtual_clock.advance(4 * HEARTBEAT)
    assert client.get(kept.key).record_version_number != kept_version
    assert client.get(key).record_version_number == lease.record_version_number
    started = virtual_clock.monotonic()
    taken = waiter.acquire(key, timeout=5 * LEASE)
    assert virtual_clock.monotonic() - started >= LEASE  # its version stood still: taken over after a lease, not before
    assert taken.fencing_token > lease.fencing_token
    kept.release()


def test_close_does_not_release_a_detached_lease(make_client, key):
    client, other = make_client(), make_client()
    lease = detach(client, key)
    client.close()
    stored = other.get(key)
    assert not stored.is_released
    assert (stored.owner_name, stored.fencing_token) == (TAB, lease.fencing_token)


def test_a_detached_lease_does_not_make_the_clients_threads_wait(make_client, dynamodb, key, store):
    client = make_client(dynamodb)
    detach(client, key)
    counter = RequestCounter(dynamodb)
    # Asked of DynamoDB (a kept lease would be refused locally, with no request).
    assert client.try_acquire(key) is None
    assert dict(counter.calls) == store.refused_update_costs


def test_a_handle_from_another_client_renews_and_releases_the_lock(make_client, dynamodb, key):
    granting, serving = make_client(), make_client(dynamodb)
    granted = detach(granting, key)
    counter = RequestCounter(dynamodb)
    handle = serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token, lease_duration=2 * LEASE)
    assert counter.total == 0
    assert not handle.keep_alive
    assert not handle.is_held()
    assert handle.remaining() == 0

    handle.extend()
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert handle.is_held()
    # The handle's own duration, not the time left: a loaded machine may take a second to answer the renewal.
    assert handle.lease_duration == 2 * LEASE
    assert 0 < handle.remaining() <= 2 * LEASE
    stored = serving.get(key)
    assert stored.record_version_number == handle.record_version_number != granted.record_version_number
    assert (stored.owner_name, stored.fencing_token, stored.lease_duration) == (TAB, granted.fencing_token, 2 * LEASE)

    counter.reset()
    assert handle.release() is True
    assert dict(counter.calls) == {"UpdateItem": 1}
    assert serving.get(key).is_released
    assert not handle.is_held()


def test_renewals_through_several_clients_keep_the_lock_past_its_lease(make_client, key, virtual_clock):
    servers = [make_client(clock=virtual_clock), make_client(clock=virtual_clock)]
    waiter = make_client(clock=virtual_clock)
    granted = detach(servers[0], key)
    for renewals in range(12):  # three leases
        servers[renewals % 2].lease(key, owner_name=TAB, fencing_token=granted.fencing_token).extend()
        assert waiter.try_acquire(key) is None
        virtual_clock.advance(LEASE / 4)
    assert waiter.get(key).owner_name == TAB
    assert granted.release() is True


@pytest.mark.parametrize("wrong", ["owner", "token"])
def test_a_handle_with_the_wrong_owner_or_token_changes_nothing(make_client, key, wrong):
    granting, serving = make_client(), make_client()
    granted = detach(granting, key)
    before = serving.get(key)
    owner = "django-user:8/tab:other" if wrong == "owner" else TAB
    token = granted.fencing_token + (1 if wrong == "token" else 0)

    with pytest.raises(LockLost) as caught:
        serving.lease(key, owner_name=owner, fencing_token=token).extend()
    assert caught.value.current.owner_name == TAB
    with pytest.raises(LockLost):
        serving.lease(key, owner_name=owner, fencing_token=token).release()

    after = serving.get(key)
    assert (after.record_version_number, after.fencing_token) == (before.record_version_number, before.fencing_token)
    assert not after.is_released


def take_it_over(client, key):
    # Detached, so no heartbeat of ours renews it while the test compares what is stored.
    client.take_over(client.get(key), keep_alive=False)


def force_release_it(client, key):
    client.force_release(client.get(key), released_by="alice")


def delete_it(client, key):
    client.dynamodb.delete_item(TableName=client.table_name, Key={"key": {"S": key}})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (take_it_over, "was taken over by"),
        (force_release_it, "was released by alice"),
        (delete_it, "was deleted by someone else"),
    ],
)
def test_renewing_a_holding_that_changed_reports_what_is_there_now(make_client, key, change, message):
    granting, serving, other = make_client(), make_client(), make_client()
    granted = detach(granting, key)
    change(other, key)
    now = other.get(key)
    handle = serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token)

    with pytest.raises(LockLost, match=message) as caught:
        handle.extend()

    assert caught.value.current == now
    assert handle.lost_to == now
    assert other.get(key) == now
    with pytest.raises(LockLost):
        serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token).release()
    assert serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token).release(best_effort=True) is False


def test_releasing_a_holding_its_owner_released_already_is_a_no_op(make_client, dynamodb, key, store):
    granting, serving = make_client(), make_client(dynamodb)
    granted = detach(granting, key)
    assert granted.release() is True
    released = serving.get(key)
    counter = RequestCounter(dynamodb)

    assert serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token).release() is False

    assert dict(counter.calls) == store.refused_update_costs
    assert serving.get(key) == released
    assert granted.release() is False  # and releasing the same lease twice, too


def test_a_detached_lease_may_be_shorter_than_two_heartbeats(make_client, key):
    client = make_client()
    lease = detach(client, key, lease_duration=HEARTBEAT)
    lease.extend(lease_duration=HEARTBEAT / 2)
    assert client.get(key).lease_duration == HEARTBEAT / 2


def test_extend_after_a_lost_response_renews(make_client, dynamodb, key):
    granting, serving = make_client(), make_client(dynamodb)
    granted = detach(granting, key)
    handle = serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token)
    faults = FaultInjector(dynamodb)
    faults.lose_response("UpdateItem")

    with pytest.raises(DynamoDBUnavailable):
        handle.extend()
    assert serving.get(key).record_version_number != granted.record_version_number  # it landed

    handle.extend()
    assert handle.is_held()
    stored = serving.get(key)
    assert stored.record_version_number == handle.record_version_number
    assert (stored.owner_name, stored.fencing_token) == (TAB, granted.fencing_token)


def test_a_release_retried_inside_botocore_after_its_answer_was_lost_counts_as_released(endpoint_url, make_client, key):
    dynamodb = make_dynamodb(endpoint_url, **RETRYING_BOTOCORE)
    granting = make_client()
    # botocore's backoff (up to 1 s) must fit in the lease's slack
    serving = make_client(dynamodb, lease_duration=3, heartbeat_period=0.5)
    granted = detach(granting, key)
    faults = FaultInjector(dynamodb)
    counter = RequestCounter(dynamodb)
    # Lost as a closed connection: botocore retries that (never a read time-out, the deadline rule).
    faults.lose_response("UpdateItem", timed_out=False)

    assert serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token).release() is True

    assert counter.calls["UpdateItem"] == 2  # the applied write + botocore's retry, refused
    stored = serving.get(key)
    assert stored.is_released
    assert stored.released_by is None


def test_a_release_whose_answer_was_lost_is_a_no_op_when_sent_again(make_client, dynamodb, key):
    granting, serving = make_client(), make_client(dynamodb)
    granted = detach(granting, key)
    FaultInjector(dynamodb).lose_response("UpdateItem")

    with pytest.raises(DynamoDBUnavailable):
        serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token).release()
    assert serving.lease(key, owner_name=TAB, fencing_token=granted.fencing_token).release() is False
    assert serving.get(key).is_released
