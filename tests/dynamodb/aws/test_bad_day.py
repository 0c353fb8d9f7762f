"""A bad day at DynamoDB, through a fault-injecting proxy in front of a real store: every wait ends on time.

Times are asserted only in the safe direction (at most the bound, plus slack for a loaded machine): the
rules themselves are unit-tested on numbers (test_deadlines.py, test_breaker.py, test_acquisition.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from dynalock_django.dynamodb import CircuitOpen, DynamoDBUnavailable
from dynalock_django.dynamodb.acquiring.plan import MAX_UNANSWERED

from ...chaos.proxy import FaultProxy, FaultRates
from ...dynamodb_support import make_dynamodb, unique

pytestmark = [pytest.mark.stores, pytest.mark.requires("http_endpoint")]

READ_TIMEOUT = 0.5
# Like the recommended config (connect 1 s, read 2 s, 3 attempts), a quarter as long.
BAD_DAY_BOTOCORE = {"connect_timeout": 0.25, "read_timeout": READ_TIMEOUT, "retries": {"total_max_attempts": 3}}
SLACK = 1.0  # for the shared machine; without the rule, each case below takes several read time-outs more


@pytest.fixture
def proxy(endpoint_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(endpoint_url, FaultRates(), seed=21) as started:
        yield started


def through(proxy, make_client, **options):
    options.setdefault("lease_duration", 10.0)
    options.setdefault("heartbeat_period", 2.0)
    return make_client(make_dynamodb(proxy.url, **BAD_DAY_BOTOCORE), **options)


def timed(call) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        call()
    except Exception as error:
        return time.monotonic() - started, error
    return time.monotonic() - started, None


def test_try_acquire_on_a_hung_endpoint_raises_within_one_read_time_out(proxy, make_client, key):
    client = through(proxy, make_client)
    proxy.hang(30)
    elapsed, error = timed(lambda: client.try_acquire(key))
    assert isinstance(error, DynamoDBUnavailable)
    assert elapsed <= READ_TIMEOUT + SLACK


@pytest.mark.parametrize("timeout", [0, 1.0])
def test_acquire_on_a_hung_endpoint_raises_within_its_timeout_and_one_read_time_out(proxy, make_client, key, timeout):
    client = through(proxy, make_client, breaker_threshold=None)  # the deadline alone, without the breaker
    proxy.hang(30)
    elapsed, error = timed(lambda: client.acquire(key, timeout=timeout))
    assert isinstance(error, DynamoDBUnavailable)
    assert elapsed <= timeout + READ_TIMEOUT + SLACK


def test_acquire_many_on_a_hung_endpoint_raises_within_its_timeout_and_one_read_time_out(proxy, make_client):
    client = through(proxy, make_client, breaker_threshold=None)
    proxy.hang(30)
    elapsed, error = timed(lambda: client.acquire_many([unique() for _ in range(3)], timeout=1.0))
    assert isinstance(error, DynamoDBUnavailable)
    assert elapsed <= 1.0 + READ_TIMEOUT + SLACK


# More attempts than recommended: a retry after a time-out (one read time-out more each) would show past the bound.
MANY_ATTEMPTS = {**BAD_DAY_BOTOCORE, "retries": {"total_max_attempts": 6}}


@pytest.mark.parametrize("many", [False, True], ids=["aacquire", "aacquire_many"])
def test_the_async_forms_on_a_hung_endpoint_raise_within_their_timeout_and_one_read_time_out(
    proxy, make_client, key, many
):
    # A lease past the worst case of one call with these attempts (the client warns otherwise).
    client = make_client(make_dynamodb(proxy.url, **MANY_ATTEMPTS), lease_duration=60.0, breaker_threshold=None)
    proxy.hang(30)

    async def acquire() -> object:
        if many:
            return await client.aacquire_many([key, unique()], timeout=1.0)
        return await client.aacquire(key, timeout=1.0)

    elapsed, error = timed(lambda: asyncio.run(acquire()))
    assert isinstance(error, DynamoDBUnavailable)
    assert elapsed <= 1.0 + READ_TIMEOUT + SLACK


def test_while_dynamodb_does_not_answer_calls_fail_at_once_then_one_probe_closes_the_breaker(proxy, make_client, key):
    client = through(proxy, make_client, breaker_threshold=2, breaker_cool_down=1.0)
    proxy.hang(30)
    for _ in range(2):
        with pytest.raises(DynamoDBUnavailable):
            client.get(key)
    sent = sum(map(len, proxy.request_sizes.values()))
    elapsed, error = timed(lambda: client.acquire(key, timeout=5))
    assert isinstance(error, CircuitOpen)
    assert elapsed < READ_TIMEOUT  # not one request's wait
    assert sum(map(len, proxy.request_sizes.values())) == sent  # nothing was sent
    proxy.hang(0)
    time.sleep(1.0)  # the cool-down
    lease = client.acquire(key, timeout=5)  # the probe, answered: closed again
    assert not client.breaker.is_open
    lease.release()


@pytest.mark.requires("transactions")
def test_lost_answers_keep_every_transaction_under_a_fixed_size(proxy, make_client):
    names = [unique() for _ in range(10)]
    dynamodb = make_dynamodb(proxy.url, **{**BAD_DAY_BOTOCORE, "retries": {"total_max_attempts": 1}})
    client = make_client(dynamodb, lease_duration=10.0, heartbeat_period=2.0, breaker_threshold=None)
    proxy.rates = FaultRates(lost_transaction=1.0)  # every transaction lands, and its answer never comes back
    with pytest.raises(DynamoDBUnavailable):
        client.acquire_many(names, timeout=8)
    sizes = proxy.request_sizes["TransactWriteItems"]
    # Three transactions past the cap, however busy the machine (the benchmark goes on to 50).
    assert len(sizes) >= MAX_UNANSWERED + 3
    first = sizes[0]
    # Each key's condition names at most MAX_UNANSWERED lost versions: 36 characters each, quoted, plus
    # a placeholder (":vNN": "...") and its separator: under 64 bytes each.
    assert max(sizes) <= first + len(names) * MAX_UNANSWERED * 64
    assert proxy.request_sizes["BatchGetItem"]  # the cap made it read to resolve them


@pytest.mark.parametrize("method", ["create_table", "create_index"])
def test_a_table_wait_on_a_hung_endpoint_raises_within_its_timeout_and_one_read_time_out(proxy, make_client, method):
    """Without the rule botocore would spend every attempt of its config (and its backoff) on one status read."""
    six_attempts = make_dynamodb(proxy.url, **{**BAD_DAY_BOTOCORE, "retries": {"total_max_attempts": 6}})
    client = make_client(
        six_attempts, table=unique("hung-table"), lease_duration=60, heartbeat_period=2, breaker_threshold=None
    )
    proxy.hang(30)
    elapsed, error = timed(lambda: getattr(client, method)(timeout=0.5))
    assert isinstance(error, DynamoDBUnavailable)
    assert elapsed <= 0.5 + READ_TIMEOUT + SLACK
