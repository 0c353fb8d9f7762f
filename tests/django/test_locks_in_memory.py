"""dynalock_django.testing.locks_in_memory: get_client() on an in-process table and a clock the test moves."""

from __future__ import annotations

import pytest
from django.conf import settings

from dynalock_django import lock_key
from dynalock_django.client import get_client
from dynalock_django.dynamodb import DynamoDBUnavailable, LockTimeout
from dynalock_django.testing import locks_in_memory
from tests.settings import NO_TABLE


def test_get_client_is_the_memorys_client_inside_the_block_and_the_settings_come_back():
    with locks_in_memory(KEY_PREFIX="mem:", LEASE_DURATION=30.0) as memory:
        assert get_client() is memory.client
        assert settings.DYNALOCK["TABLE_NAME"] == memory.table_name
        assert memory.client.lease_duration == 30.0
        with lock_key("job") as lease:
            assert lease.key == "mem:job"
        assert memory.client.get("mem:job").is_released
    assert settings.DYNALOCK == NO_TABLE


def test_another_processs_client_shares_the_table_and_the_clock():
    with locks_in_memory(LEASE_DURATION=20.0, HEARTBEAT_PERIOD=5.0) as memory:
        colleague = memory.new_client()
        held = colleague.acquire("customer:1")
        memory.advance(600.0)  # ten minutes: the colleague's heartbeat renews all along
        assert held.is_held()
        with pytest.raises(LockTimeout):
            memory.client.acquire("customer:1", timeout=60.0)
        assert memory.clock.monotonic() >= 1000.0 + 660.0


def test_faults_reach_the_client_get_client_returns():
    with locks_in_memory(BREAKER_THRESHOLD=None) as memory:
        memory.faults.hang()
        with pytest.raises(DynamoDBUnavailable):
            get_client().try_acquire("job")
        memory.faults.heal()
        assert get_client().try_acquire("job") is not None


def test_each_block_has_a_table_of_its_own():
    with locks_in_memory() as first:
        first.client.acquire("job")
    with locks_in_memory() as second:
        assert second.table_name != first.table_name
        assert second.client.try_acquire("job") is not None
