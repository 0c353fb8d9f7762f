"""Faults injected into a real botocore client: throttling, 5xx, lost answers, refusals."""

from __future__ import annotations

import time

import pytest

from dynalock_django.dynamodb import DynamoDBError, DynamoDBUnavailable, LockClient

from ...dynamodb_support import LEASE, PATIENCE, FaultInjector, RequestCounter, make_dynamodb, wait_for

RETRYING_BOTOCORE = {"retries": {"mode": "standard", "total_max_attempts": 2}, "read_timeout": 0.2}


@pytest.mark.parametrize(
    ("code", "status"),
    # ReplicatedWriteConflictException: a strongly consistent global table's refusal while another region writes.
    [("ThrottlingException", 400), ("InternalServerError", 500), ("ReplicatedWriteConflictException", 400)],
)
def test_acquire_retries_transient_errors_within_its_timeout(make_client, dynamodb, key, code, status):
    # A long lease: its first renewal comes long after the count, however slowly a loaded machine retries.
    client = make_client(dynamodb, lease_duration=60.0, heartbeat_period=20.0)
    faults = FaultInjector(dynamodb)
    counter = RequestCounter(dynamodb)
    faults.fail("UpdateItem", code, status, times=2)
    lease = client.acquire(key, timeout=5)
    assert counter.calls["UpdateItem"] == 3
    assert lease.is_held()
    lease.release()


def test_acquire_gives_up_with_the_dynamodb_error_when_it_never_recovers(make_client, dynamodb, key):
    client = make_client(dynamodb)
    FaultInjector(dynamodb).fail("*", "InternalServerError", 500, times=-1)
    with pytest.raises(DynamoDBUnavailable) as caught:
        client.acquire(key, timeout=0.5)
    assert "InternalServerError" in str(caught.value.original)


def test_acquire_whose_answer_was_lost_finds_the_lock_is_ours(make_client, dynamodb, key):
    client = make_client(dynamodb)
    faults = FaultInjector(dynamodb)
    faults.lose_response("UpdateItem", times=1)
    lease = client.acquire(key, timeout=5)
    stored = client.get(key)
    assert stored.owner_name == client.owner_name
    assert stored.record_version_number == lease.record_version_number
    assert stored.fencing_token == lease.fencing_token
    assert faults.injected["UpdateItem"] == 1
    lease.release()
    assert client.get(key).is_released


def test_a_write_retried_inside_botocore_that_fails_its_condition_is_recognised_as_ours(endpoint_url, make_client, key):
    dynamodb = make_dynamodb(endpoint_url, **RETRYING_BOTOCORE)
    # botocore's backoff (up to 1 s) must fit in the lease's slack
    client = make_client(dynamodb, lease_duration=3, heartbeat_period=0.5)
    faults = FaultInjector(dynamodb)
    counter = RequestCounter(dynamodb)
    faults.lose_response("UpdateItem", times=1, timed_out=False)
    lease = client.acquire(key, timeout=5)
    # the applied write + botocore's retry, refused because the item is now ours
    assert counter.calls["UpdateItem"] == 2
    assert client.get(key).record_version_number == lease.record_version_number
    faults.lose_response("UpdateItem", times=1, timed_out=False)  # the release, this time
    assert lease.release() is True
    assert client.get(key).is_released


def test_try_acquire_whose_connection_closed_reads_once_and_returns_the_lease(make_client, dynamodb, key):
    client = make_client(dynamodb)
    faults = FaultInjector(dynamodb)
    counter = RequestCounter(dynamodb)
    faults.lose_response("UpdateItem", times=1, timed_out=False)
    lease = client.try_acquire(key)
    assert lease is not None
    assert dict(counter.calls) == {"UpdateItem": 1, "GetItem": 1}  # no retry inside botocore: an answer now
    lease.release()


def test_try_acquire_whose_answer_timed_out_raises_at_once_and_cleans_up_in_the_background(make_client, dynamodb, key):
    client, other = make_client(dynamodb), make_client()
    faults = FaultInjector(dynamodb)
    counter = RequestCounter(dynamodb)
    faults.lose_response("UpdateItem", times=1)
    with pytest.raises(DynamoDBUnavailable):
        client.try_acquire(key)
    # Asking again after a time-out would wait as long again: the write that landed is released behind the caller.
    wait_for(lambda: counter.calls["UpdateItem"] == 2, PATIENCE)
    wait_for(lambda: client.get(key).is_released, PATIENCE)
    assert other.try_acquire(key) is not None


def test_try_acquire_when_dynamodb_is_down_raises_instead_of_saying_held(make_client, dynamodb, key):
    client = make_client(dynamodb)
    FaultInjector(dynamodb).fail("*", "ServiceUnavailable", 503, times=-1)
    with pytest.raises(DynamoDBUnavailable):
        client.try_acquire(key)


def test_heartbeat_whose_answer_was_lost_keeps_the_lease(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    faults = FaultInjector(dynamodb)
    lease = client.acquire(key)
    faults.lose_response("UpdateItem", times=2)
    virtual_clock.advance(3 * LEASE)
    assert faults.injected["UpdateItem"] == 2
    assert lease.is_held()
    assert client.get(key).record_version_number == lease.record_version_number
    lease.release()


def test_release_failing_transiently_raises_and_the_lock_expires_by_itself(make_client, dynamodb, key):
    client, waiter = make_client(dynamodb), make_client()
    lease = client.acquire(key)
    FaultInjector(dynamodb).fail("UpdateItem", "InternalServerError", 500, times=1)
    with pytest.raises(DynamoDBUnavailable) as caught:
        lease.release()
    assert any("expires by itself" in note for note in caught.value.__notes__)
    assert not lease.is_held()
    started = time.monotonic()
    taken = waiter.acquire(key, timeout=5 * LEASE)
    assert time.monotonic() - started < LEASE + PATIENCE
    taken.release()


def test_best_effort_release_when_dynamodb_fails_returns_false(make_client, dynamodb, key):
    client = make_client(dynamodb)
    lease = client.acquire(key)
    FaultInjector(dynamodb).fail("UpdateItem", "InternalServerError", 500, times=1)
    assert lease.release(best_effort=True) is False


def test_access_denied_surfaces_at_once_wrapped_with_the_fix(make_client, dynamodb, key):
    client = make_client(dynamodb)
    faults = FaultInjector(dynamodb)
    counter = RequestCounter(dynamodb)
    faults.fail("UpdateItem", "AccessDeniedException", 400, times=-1)
    with pytest.raises(DynamoDBError, match="grant dynamodb:GetItem, UpdateItem") as caught:
        client.acquire(key, timeout=5)
    assert not isinstance(caught.value, DynamoDBUnavailable)
    assert counter.calls["UpdateItem"] == 1  # not retried: it is not transient


def test_bad_credentials_name_the_variables_to_set(make_client, dynamodb, key):
    client = make_client(dynamodb)
    FaultInjector(dynamodb).fail("*", "UnrecognizedClientException", 400, times=-1)
    with pytest.raises(DynamoDBError, match="AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        client.get(key)


def test_the_default_botocore_config_is_warned_about(endpoint_url, table_name):
    import boto3

    from dynalock_django.dynamodb import RetryBudgetWarning

    slow = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    with pytest.warns(RetryBudgetWarning, match=r"may block for 487s") as warned:
        LockClient(slow, table_name)
    (warning,) = warned
    advice = str(warning.message)
    # Each reader finds the knob they hold: the protocol's, the Config of the client they pass; Django's, its setting.
    assert "build the boto3 client you pass it with config=Config(connect_timeout=1, read_timeout=2, " in advice
    assert 'with Django, set DYNALOCK["BOTO_CONFIG"] = {"connect_timeout": 1, "read_timeout": 2, ' in advice
