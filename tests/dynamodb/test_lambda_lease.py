"""lambda_lease on the in-process lambda_store and the virtual clock: an invocation's lease, its freeze, its successor.

Each "execution environment" is a LockClient of its own on the shared lambda_store and clock; an invocation is
a context whose deadline is on that clock. A freeze is time passing while the environment runs nothing:
no heartbeat would have run either, and this lease has none.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from dynalock_django.dynamodb import (
    InMemoryDynamoDB,
    InvalidLockRequest,
    Lease,
    LockClient,
    LockLost,
    LockNotAcquired,
    VirtualClock,
    lambda_lease,
    lambda_locked,
)
from dynalock_django.dynamodb.lambda_lease import DEFAULT_CLOCK_SKEW, DEFAULT_MARGIN, OWNER_MARK

from ..dynamodb_support import RequestCounter


class Context:
    """Lambda's context object, as far as a lease asks: the invocation ends ``seconds`` after it began."""

    def __init__(self, clock: VirtualClock, seconds: float) -> None:
        self.clock = clock
        self.deadline = clock.time() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - self.clock.time()) * 1000))


class Tables:
    """The in-process store (one per process: each test's tables are its own), a lock table and a data table."""

    def __init__(self, clock: VirtualClock) -> None:
        self.store = InMemoryDynamoDB(clock)
        suffix = uuid.uuid4().hex[:8]
        self.locks, self.data = f"locks-{suffix}", f"orders-{suffix}"

    def client(self) -> Any:
        return self.store.client()

    def close(self) -> None:
        for table in (self.locks, self.data):
            self.client().delete_table(TableName=table)
        self.store.close()


@pytest.fixture
def lambda_store(virtual_clock: VirtualClock) -> Iterator[Tables]:
    store = Tables(virtual_clock)
    LockClient(store.client(), store.locks, clock=virtual_clock).create_table()
    store.client().create_table(
        TableName=store.data,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield store
    store.close()


def environment(store: Tables, clock: VirtualClock) -> LockClient:
    """A new execution environment's client (a cold start), with the suite's short refresh."""
    return LockClient(store.client(), store.locks, clock=clock, refresh_period=0.25)


def fenced_write(store: Tables, token: int, value: str) -> bool:
    """The data store's fence: the write lands only if no newer token wrote the order."""
    try:
        store.client().put_item(
            TableName=store.data,
            Item={"id": {"S": "order-1"}, "token": {"N": str(token)}, "value": {"S": value}},
            ConditionExpression="attribute_not_exists(#t) OR #t <= :mine",
            ExpressionAttributeNames={"#t": "token"},
            ExpressionAttributeValues={":mine": {"N": str(token)}},
        )
    except ClientError as error:
        refused = error.response["Error"]["Code"] == "ConditionalCheckFailedException"
        if not refused:
            raise
        return False
    return True


def test_an_invocation_takes_a_lease_for_its_rest_and_a_margin_in_two_requests_and_no_thread(
    lambda_store, virtual_clock
):
    client = environment(lambda_store, virtual_clock)
    counter = RequestCounter(client.dynamodb)
    threads = threading.active_count()
    with lambda_lease(client, "order-1", Context(virtual_clock, 30.0)) as lease:
        assert lease.lease_duration == pytest.approx(30.0 + DEFAULT_MARGIN)
        assert lease.is_held()
        assert not lease.keep_alive  # nothing renews it
        assert threading.active_count() == threads  # no heartbeat thread
        virtual_clock.advance(25.0)
        assert lease.is_held()  # held to the invocation's end without a renewal
    assert counter.calls == {"UpdateItem": 2}  # the acquire and the release
    assert client.get("order-1").is_released


def test_work_that_cannot_finish_in_the_invocation_is_not_started_and_costs_no_request(lambda_store, virtual_clock):
    client = environment(lambda_store, virtual_clock)
    counter = RequestCounter(client.dynamodb)
    with (
        pytest.raises(LockNotAcquired, match=r"2\.000 s are left of this invocation and it needs 5\.000 s"),
        lambda_lease(client, "order-1", Context(virtual_clock, 2.0), needs=5.0),
    ):
        pytest.fail("the work started")
    assert counter.total == 0


def test_an_invocation_that_waited_until_too_little_was_left_lets_go_at_once(lambda_store, virtual_clock):
    holder = environment(lambda_store, virtual_clock)
    held = holder.acquire("order-1", lease_duration=3.0, keep_alive=False)  # a holder that dies: no renewal
    late = environment(lambda_store, virtual_clock)
    # 6 s left, 4 s of work: the wait is capped at 2 s, and a lease not renewed for 3 s is not taken in 2.
    started = virtual_clock.monotonic()
    with (
        pytest.raises(LockNotAcquired),
        lambda_lease(late, "order-1", Context(virtual_clock, 6.0), needs=4.0, timeout=60.0),
    ):
        pytest.fail("the work started")
    assert late.get("order-1").owner_name == held.owner_name
    assert virtual_clock.monotonic() - started == pytest.approx(2.0, abs=0.3)  # it waited what the work left


def test_a_frozen_invocation_never_writes_under_its_expired_lease_and_the_next_takes_over_within_a_lease(
    lambda_store, virtual_clock
):
    first_env, second_env = environment(lambda_store, virtual_clock), environment(lambda_store, virtual_clock)
    first = lambda_lease(first_env, "order-1", Context(virtual_clock, 3.0))
    lease = first.__enter__()  # the block runs; then the environment is frozen inside it
    assert lease.is_held()
    assert fenced_write(lambda_store, lease.fencing_token, "first")
    first_lease_ends = lease.safe_until

    virtual_clock.advance(10.0)  # frozen: nothing of the first environment runs
    started = virtual_clock.monotonic()
    with lambda_lease(second_env, "order-1", Context(virtual_clock, 30.0), timeout=10.0) as second:
        taken = second.safe_until - second.lease_duration  # when its write was sent
        assert fenced_write(lambda_store, second.fencing_token, "second")

        # Thawed inside the first block: its lease ran out on its own clock, and it does not trust it.
        assert not lease.is_held()
        with pytest.raises(LockLost):
            lease.ensure_held()
        assert not fenced_write(
            lambda_store, lease.fencing_token, "first, late"
        )  # and had it written, the fence refuses
        with pytest.raises(LockLost, match="ran out before the block ended"):
            first.__exit__(None, None, None)

    assert taken >= first_lease_ends  # zero overlap: the second's lease begins after the first's ended
    assert taken - started <= lease.lease_duration + 0.25 + 0.01  # within one lease (and a poll) of its start
    stored = lambda_store.client().get_item(TableName=lambda_store.data, Key={"id": {"S": "order-1"}})["Item"]
    assert stored["value"] == {"S": "second"}


def killed_at_its_timeout(store: Tables, clock: VirtualClock, seconds: float) -> tuple[Lease, Any]:
    """An invocation that takes the key, writes, and is killed by Lambda at its timeout ``seconds`` later.

    Its block is returned with the lease for the test to keep: a block collected would release the key.
    """
    block = lambda_lease(environment(store, clock), "order-1", Context(clock, seconds))
    lease = block.__enter__()
    assert fenced_write(store, lease.fencing_token, "killed")
    clock.advance(seconds)  # its deadline: Lambda stops it, nothing releases the key
    return lease, block


def test_an_invocation_killed_at_its_timeout_leaves_the_key_margin_and_skew_after_its_deadline(
    lambda_store, virtual_clock
):
    """docs/lambda.md: the next lambda_lease takes the key deadline + margin + max_clock_skew, not a lease later."""
    killed, _block = killed_at_its_timeout(lambda_store, virtual_clock, 30.0)
    deadline = virtual_clock.time()
    assert killed.owner_name.endswith(OWNER_MARK)

    late = environment(lambda_store, virtual_clock)
    with lambda_lease(late, "order-1", Context(virtual_clock, 60.0), timeout=10.0) as second:
        taken = virtual_clock.time()
        assert fenced_write(lambda_store, second.fencing_token, "next")
        assert not fenced_write(lambda_store, killed.fencing_token, "killed, late")
    assert taken >= deadline + DEFAULT_MARGIN + DEFAULT_CLOCK_SKEW  # its lease ran out on the holder's clock first
    assert taken <= deadline + DEFAULT_MARGIN + DEFAULT_CLOCK_SKEW + 0.01  # and not a 31 s lease of watching later
    assert second.fencing_token > killed.fencing_token


def test_without_a_timeout_a_lambda_lease_past_its_stamp_is_taken_with_one_write_more(lambda_store, virtual_clock):
    _killed = killed_at_its_timeout(lambda_store, virtual_clock, 30.0)
    virtual_clock.advance(DEFAULT_MARGIN + DEFAULT_CLOCK_SKEW + 0.5)
    late = environment(lambda_store, virtual_clock)
    counter = RequestCounter(late.dynamodb)
    with lambda_lease(late, "order-1", Context(virtual_clock, 20.0)) as lease:
        assert lease.is_held()
        assert counter.calls == {"UpdateItem": 2}  # refused (the item comes back with it), then the takeover
    assert counter.calls == {"UpdateItem": 3}


def test_the_stamp_rule_is_only_for_lambda_leases_and_only_with_a_skew(lambda_store, virtual_clock):
    """Another holder's item (its clock not Lambda's), or max_clock_skew=None: the protocol's lease of watching."""
    holder = environment(lambda_store, virtual_clock)
    holder.acquire("order-2", lease_duration=3.0, keep_alive=False)  # died at once, stamped, not a lambda_lease
    _killed = killed_at_its_timeout(lambda_store, virtual_clock, 3.0)
    virtual_clock.advance(10.0)
    late = environment(lambda_store, virtual_clock)
    for key, skew in (("order-2", DEFAULT_CLOCK_SKEW), ("order-1", None)):
        with pytest.raises(LockNotAcquired), lambda_lease(late, key, Context(virtual_clock, 20.0), max_clock_skew=skew):
            pytest.fail("taken by the stamp rule")


def test_two_invocations_past_a_stamp_take_the_key_one_at_a_time(lambda_store, virtual_clock):
    """The takeover is conditioned on the version read: the one whose write comes second finds it changed."""
    killed, _block = killed_at_its_timeout(lambda_store, virtual_clock, 30.0)
    virtual_clock.advance(DEFAULT_MARGIN + DEFAULT_CLOCK_SKEW + 0.5)
    slow, quick = environment(lambda_store, virtual_clock), environment(lambda_store, virtual_clock)
    winners: list[tuple[Lease, Any]] = []  # each with its block, kept (collected, it would release the key)
    updates = iter(range(100))

    def quick_takes_it_first(**_: Any) -> None:
        if next(updates) == 1:  # slow's takeover, about to be sent: quick read the same item and takes it now
            block = lambda_lease(quick, "order-1", Context(virtual_clock, 20.0))
            winners.append((block.__enter__(), block))

    slow.dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", quick_takes_it_first)
    with pytest.raises(LockNotAcquired), lambda_lease(slow, "order-1", Context(virtual_clock, 20.0)):
        pytest.fail("two holders")
    [(winner, _)] = winners
    stored = slow.get("order-1")
    assert not stored.is_released
    assert stored.owner_name == winner.owner_name
    assert winner.fencing_token > killed.fencing_token


def test_the_decorator_runs_the_handler_with_its_lease_on_the_events_key(lambda_store, virtual_clock):
    client = environment(lambda_store, virtual_clock)
    seen = []

    @lambda_locked(client, lambda event: f"order-{event['id']}", needs=1.0)
    def handler(event, context, lease):
        seen.append((lease.key, lease.is_held()))
        return "done"

    assert handler({"id": 7}, Context(virtual_clock, 10.0)) == "done"
    assert seen == [("order-7", True)]
    assert client.get("order-7").is_released


def test_a_block_that_raises_releases_and_its_error_stands(lambda_store, virtual_clock):
    client = environment(lambda_store, virtual_clock)
    with pytest.raises(ZeroDivisionError), lambda_lease(client, "order-1", Context(virtual_clock, 10.0)):
        1 / 0  # noqa: B018
    assert client.get("order-1").is_released


def test_an_invocation_whose_acquire_ate_the_time_for_its_work_lets_go_at_once(lambda_store, virtual_clock):
    """The acquire came back with less left than the work needs (a slow answer): the lease is released, unused."""
    client = environment(lambda_store, virtual_clock)
    context = Context(virtual_clock, 10.0)
    client.dynamodb.meta.events.register(
        "after-call.dynamodb.UpdateItem", lambda **_: setattr(context, "deadline", virtual_clock.time() + 0.5)
    )
    with (
        pytest.raises(LockNotAcquired, match=r"0\.500 s are left"),
        lambda_lease(client, "order-1", context, needs=4.0),
    ):
        pytest.fail("the work started")
    assert client.get("order-1").is_released


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"needs": -1.0}, "needs must be a finite number"),
        ({"margin": 0.0}, "margin must be a finite number of seconds, more than 0"),
        ({"timeout": float("nan")}, "timeout must be"),
        ({"max_clock_skew": -1.0}, "max_clock_skew must be a finite number of seconds, 0 or more"),
    ],
)
def test_bad_options_are_refused_naming_them(lambda_store, virtual_clock, options, says):
    with (
        pytest.raises(InvalidLockRequest, match=says),
        lambda_lease(environment(lambda_store, virtual_clock), "k", Context(virtual_clock, 10.0), **options),
    ):
        pass


def test_something_that_is_not_a_lambda_context_is_refused_naming_the_fix(lambda_store, virtual_clock):
    with (
        pytest.raises(InvalidLockRequest, match="needs the Lambda context"),
        lambda_lease(environment(lambda_store, virtual_clock), "k", {"remaining": 3}),
    ):
        pass


def test_without_a_timeout_a_held_key_is_refused_at_once_with_one_write(lambda_store, virtual_clock):
    """The docs' promise: no timeout, no wait (not the whole invocation's wait): one refused UpdateItem."""
    holder = environment(lambda_store, virtual_clock)
    holder.acquire("order-1", lease_duration=600.0, keep_alive=False)
    late = environment(lambda_store, virtual_clock)
    counter = RequestCounter(late.dynamodb)
    started = virtual_clock.monotonic()
    with pytest.raises(LockNotAcquired), lambda_lease(late, "order-1", Context(virtual_clock, 20.0)):
        pytest.fail("the work started")
    assert virtual_clock.monotonic() == started
    assert counter.calls == {"UpdateItem": 1}


class Readings:
    """A context whose answers are given in turn."""

    def __init__(self, *millis: Any) -> None:
        self.millis = list(millis)

    def get_remaining_time_in_millis(self) -> Any:
        return self.millis.pop(0)


def test_a_context_that_stops_answering_after_the_acquire_leaves_no_lease(lambda_store, virtual_clock):
    client = environment(lambda_store, virtual_clock)
    with pytest.raises(InvalidLockRequest, match="gave None"), lambda_lease(client, "k", Readings(10_000, None)):
        pytest.fail("the work started")
    assert client.get("k").is_released


def test_a_remaining_time_longer_than_lambdas_longest_invocation_is_held_to_it(lambda_store, virtual_clock):
    """Lambda runs an invocation 15 minutes at most: a context saying a day does not hold the key for a day."""
    client = environment(lambda_store, virtual_clock)
    with lambda_lease(client, "k", Readings(86_400_000, 86_400_000)) as lease:
        assert lease.lease_duration == pytest.approx(900.0 + DEFAULT_MARGIN)
