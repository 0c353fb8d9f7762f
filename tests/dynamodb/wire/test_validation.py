"""Bad options and arguments get an error naming the problem and the fix."""

from __future__ import annotations

import math

import pytest

from dynalock_django.dynamodb import ConfigurationError, InvalidLockRequest, LockClient


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lease_duration": 10, "heartbeat_period": 5}, "must be more than twice heartbeat_period"),
        ({"lease_duration": 0}, "lease_duration must be a positive number"),
        ({"heartbeat_period": -1}, "heartbeat_period must be a positive number"),
        ({"lease_duration": "20"}, "lease_duration must be a positive number"),
        ({"refresh_period": 0}, "refresh_period must be a positive number"),
        ({"owner_name": ""}, "owner_name must be a non-empty string or None"),
        ({"partition_key_name": None}, "partition_key_name must be a non-empty string"),
        ({"ttl_attribute": ""}, "ttl_attribute must be a non-empty string or None"),
    ],
)
def test_a_bad_client_option_is_a_configuration_error_naming_it(dynamodb, options, message):
    with pytest.raises(ConfigurationError, match=message):
        LockClient(dynamodb, "locks", **options)


@pytest.mark.parametrize("name", ["ab", "has space", "x" * 256, None])
def test_an_invalid_table_name_is_refused_with_the_rule(dynamodb, name):
    with pytest.raises(ConfigurationError, match="Invalid DynamoDB table name"):
        LockClient(dynamodb, name)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", "must not be empty"),
        (42, "must be a string, not int"),
        ("é" * 1025, "2050 bytes in UTF-8, over DynamoDB's 2048-byte limit"),
    ],
)
def test_an_empty_non_string_or_oversized_key_is_refused_naming_the_problem(make_client, key, message):
    with pytest.raises(InvalidLockRequest, match=message):
        make_client().try_acquire(key)


def test_a_key_of_exactly_2048_bytes_is_locked_and_read_back(make_client):
    client = make_client()
    lease = client.acquire("k" * 2048)
    assert client.get("k" * 2048).record_version_number == lease.record_version_number
    lease.release()


def test_data_must_be_bytes_and_fit_the_item(make_client, key):
    client = make_client()
    with pytest.raises(InvalidLockRequest, match="data must be bytes or None, not str; encode it first"):
        client.acquire(key, data="text")
    with pytest.raises(InvalidLockRequest, match="over DynamoDB's 409600-byte item limit"):
        client.acquire(key, data=b"x" * 409_600)
    # moto counts binary values base64-encoded (DynamoDB counts raw bytes): stay under both.
    lease = client.acquire(key, data=b"x" * 300_000)
    assert client.get(key).data == b"x" * 300_000
    lease.release()


@pytest.mark.parametrize("timeout", [-1, math.nan])
def test_a_negative_or_nan_timeout_is_refused(make_client, key, timeout):
    with pytest.raises(InvalidLockRequest, match="timeout must be a number of seconds >= 0"):
        make_client().acquire(key, timeout=timeout)


def test_a_sort_key_for_a_client_without_a_sort_key_name_is_refused(make_client, key):
    with pytest.raises(InvalidLockRequest, match="no sort_key_name"):
        make_client().acquire(key, sort_key="x")


def test_a_closed_client_refuses_to_lock(make_client, key):
    from dynalock_django.dynamodb import ClientClosed

    client = make_client()
    client.close()
    with pytest.raises(ClientClosed, match="create a new LockClient"):
        client.acquire(key)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"owner_name": ""}, ConfigurationError, "owner_name must be a non-empty string or None"),
        ({"lease_duration": 0.4}, ConfigurationError, "must be more than twice heartbeat_period"),
        ({"lease_duration": 0, "keep_alive": False}, ConfigurationError, "lease_duration must be a positive number"),
    ],
)
def test_bad_lease_options_are_refused_by_acquire_and_try_acquire_alike(make_client, key, options, error, message):
    client = make_client()  # heartbeat_period 0.25 s
    with pytest.raises(error, match=message):
        client.try_acquire(key, **options)
    with pytest.raises(error, match=message):
        client.acquire(key, timeout=0, **options)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"owner_name": "", "fencing_token": 1}, ConfigurationError, "owner_name must be a non-empty string"),
        ({"owner_name": "tab", "fencing_token": "1"}, InvalidLockRequest, "fencing_token must be an integer"),
        ({"owner_name": "tab", "fencing_token": True}, InvalidLockRequest, "fencing_token must be an integer"),
        ({"owner_name": "tab", "fencing_token": 1, "lease_duration": -1}, ConfigurationError, "positive number"),
    ],
)
def test_a_lease_handle_with_a_bad_owner_token_or_duration_is_refused(make_client, key, options, error, message):
    with pytest.raises(error, match=message):
        make_client().lease(key, **options)


@pytest.mark.parametrize("bad", [0, 65, 1.5, "4", True, None])
def test_renewal_workers_must_be_a_whole_number_from_1_to_64(bad):
    with pytest.raises(
        ConfigurationError, match=r"renewal_workers must be a whole number from 1 to 64, not .*max_pool"
    ):
        LockClient(lambda: None, "locks", renewal_workers=bad)
