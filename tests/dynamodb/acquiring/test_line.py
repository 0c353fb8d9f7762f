"""The line of code waiters: first come, first served; one look per key per process; a dead head passed over.

Each client stands for a process. Time is the virtual clock's: the waiters are threads that wait
on it, and the test moves it (a waiter's look, a refresh, a window ends exactly when it says).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from dynalock_django.dynamodb import DynamoDBUnavailable, InMemoryDynamoDB, LockClient, LockTimeout, VirtualClock
from dynalock_django.dynamodb.acquiring.line_seats import HEAD_LOOK_SECONDS, LINE_LOOK_PERIODS, LineTiming
from dynalock_django.dynamodb.acquiring.turns import Turns
from dynalock_django.dynamodb.wire.waiters import LINE, entry, parse_waiters

from ...dynamodb_support import REFRESH, RequestCounter, error_response
from ...java_client import JavaLockClient

TIMING = LineTiming.for_refresh_period(REFRESH)
WINDOW = TIMING.window


def line_of(client: LockClient, key: str) -> list[str]:
    """The names in the key's line, first first (live or not)."""
    info = client.get(key)
    assert info is not None
    return [waiter.name for waiter in parse_waiters(info.raw_line)]


def start_waiter(clock: VirtualClock, target: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    clock.follow(thread)  # time waits for it until it waits: it has joined the line when advance returns
    thread.start()
    return thread


def timing_out(acquire: Callable[[], object], error: type[Exception] = LockTimeout) -> Callable[[], None]:
    """A wait that ends without the lock: by its deadline, or (``error``) by the failure of its last look."""

    def wait() -> None:
        with pytest.raises(error):
            acquire()

    return wait


def run_until_done(clock: VirtualClock, threads: list[threading.Thread], *, seconds: float, step: float = 0.05) -> None:
    for _ in range(int(seconds / step)):
        if not any(thread.is_alive() for thread in threads):
            return
        clock.advance(step)
    raise AssertionError("waiters still waiting")


def test_processes_in_line_get_a_held_lock_in_the_order_they_joined(make_client, key, virtual_clock):
    holder = make_client(clock=virtual_clock)
    lease = holder.acquire(key)
    granted: list[tuple[str, int]] = []
    threads = []
    for number in range(8):
        waiter = make_client(clock=virtual_clock, owner_name=f"p{number}")

        def wait(waiter: LockClient = waiter) -> None:
            got = waiter.acquire(key, timeout=60)
            granted.append((got.owner_name, got.fencing_token))
            got.release()

        threads.append(start_waiter(virtual_clock, wait))
        virtual_clock.advance(0.01)
    assert line_of(holder, key) == [f"p{number}" for number in range(8)]

    lease.release()
    arrival = make_client(clock=virtual_clock, owner_name="late")
    assert arrival.try_acquire(key) is None  # free, but the line goes first: no barging

    def arrive() -> None:  # an arrival that waits joins behind the line
        got = arrival.acquire(key, timeout=60)
        granted.append((got.owner_name, got.fencing_token))
        got.release()

    threads.append(start_waiter(virtual_clock, arrive))
    run_until_done(virtual_clock, threads, seconds=30)

    assert [owner for owner, _ in granted] == [*(f"p{number}" for number in range(8)), "late"]
    tokens = [token for _, token in granted]
    assert tokens == sorted(set(tokens))  # strictly increasing


def test_a_head_that_stopped_looking_is_passed_over_within_its_window(
    make_client, dynamodb, table_name, key, virtual_clock
):
    holder = make_client(clock=virtual_clock)
    lease = holder.acquire(key)
    # A process that joined first and was killed: its entry is never refreshed again.
    seen_ms = int(virtual_clock.time() * 1000)
    entry = {
        "name": {"S": "killed"},
        "since": {"N": str(seen_ms)},
        "seen": {"N": str(seen_ms)},
        "window": {"N": str(int(WINDOW * 1000))},
    }
    dynamodb.update_item(
        TableName=table_name,
        Key={"key": {"S": key}},
        UpdateExpression="SET #line = :line",
        ExpressionAttributeNames={"#line": LINE},
        ExpressionAttributeValues={":line": {"M": {"killed": {"M": entry}}}},
    )
    killed_at = virtual_clock.monotonic()
    virtual_clock.advance(0.01)
    waiter = make_client(clock=virtual_clock, owner_name="next")
    got: list[float] = []
    thread = start_waiter(
        virtual_clock, lambda: got.append(waiter.acquire(key, timeout=60) and virtual_clock.monotonic())
    )
    virtual_clock.advance(0.01)
    lease.release()

    virtual_clock.advance(WINDOW - 0.2)
    assert not got  # the killed head's place is kept while its window lasts
    run_until_done(virtual_clock, [thread], seconds=5)
    # Within its window (counted from its last refresh), plus a look of the one after it (docs/guarantees.md).
    assert WINDOW <= got[0] - killed_at <= WINDOW + TIMING.line_look + 0.05


def test_try_acquire_never_joins_the_line(make_client, key):
    holder, other = make_client(), make_client()
    lease = holder.acquire(key)
    assert other.try_acquire(key) is None
    with pytest.raises(LockTimeout):
        other.acquire(key, timeout=0)  # a try too: it waits for nothing, so it joins nothing
    assert line_of(holder, key) == []
    lease.release()


@pytest.fixture
def fixed_jitter(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    """Make every pause of a wait the given fraction of its period (1: the period; 0.5: half of it)."""

    def fix(fraction: float) -> None:
        monkeypatch.setattr(random, "uniform", lambda low, high: low + (high - low) * (fraction - 0.5) / 0.5)

    return fix


def wait_for_a_held_key(
    make_client: Callable[..., LockClient],
    key: str,
    clock: VirtualClock,
    *,
    threads: int,
    seconds: float,
    ahead: int = 0,
) -> dict[str, Any]:
    """Requests one client's ``threads`` waiters send while they wait ``seconds`` for a key held all along,
    behind ``ahead`` other processes' waiters in line."""
    holder = make_client(clock=clock, lease_duration=120.0, heartbeat_period=30.0)  # nobody may take it over
    lease = holder.acquire(key)
    others = [make_client(clock=clock, refresh_period=1.0) for _ in range(ahead)]
    started = [
        start_waiter(clock, timing_out(lambda other=other: other.acquire(key, timeout=seconds + 2))) for other in others
    ]
    clock.advance(0.01)  # they joined first
    counted = make_client(clock=clock, refresh_period=1.0)  # the default's pace, as docs/operations.md states it
    counter = RequestCounter(counted.dynamodb)
    mine = [start_waiter(clock, timing_out(lambda: counted.acquire(key, timeout=seconds))) for _ in range(threads)]
    run_until_done(clock, mine, seconds=seconds + 1, step=1.0)
    calls = dict(counter.calls)
    run_until_done(clock, started, seconds=3, step=1.0)
    lease.release()
    return calls


def test_the_head_reads_as_often_as_docs_say(make_client, key, virtual_clock, fixed_jitter):
    fixed_jitter(1.0)  # every pause the whole period: HEAD_LOOK_SECONDS, LINE_LOOK_PERIODS * refresh_period
    calls = wait_for_a_held_key(make_client, key, virtual_clock, threads=1, seconds=60.0)
    # The refused write, the join and the leave at the end; between them a look every 0.1 s: a read, or,
    # at the first look a line period (2 s) after the last, a refresh of its entry (docs/operations.md: 600 looks
    # a minute, at most 30 of them writes).
    refreshes = calls["UpdateItem"] - 3
    assert 60 / (LINE_LOOK_PERIODS * 1.0 + HEAD_LOOK_SECONDS) - 1 <= refreshes <= 60 / (LINE_LOOK_PERIODS * 1.0)
    assert calls["GetItem"] + calls["UpdateItem"] - 3 == pytest.approx(60 / HEAD_LOOK_SECONDS, abs=2)


@pytest.mark.requires("old_item_on_refusal")  # else a refused write is followed by a read
def test_the_third_in_line_refreshes_its_entry_as_docs_say(make_client, key, virtual_clock, fixed_jitter):
    fixed_jitter(1.0)
    calls = wait_for_a_held_key(make_client, key, virtual_clock, threads=1, seconds=20.0, ahead=2)
    # The refused write, the join and the leave; between them a look every 2 s, each a refresh of its entry
    # (docs/operations.md: 30 UpdateItems a minute; a third of a minute here), and no read.
    assert calls.get("GetItem", 0) == 0
    assert calls["UpdateItem"] - 3 == pytest.approx(20 / (LINE_LOOK_PERIODS * 1.0), abs=1)


def test_fifty_threads_of_one_process_cost_what_one_waiter_costs(make_client, key, virtual_clock, fixed_jitter):
    fixed_jitter(1.0)
    alone = wait_for_a_held_key(make_client, key, virtual_clock, threads=1, seconds=10.0)
    fifty = wait_for_a_held_key(make_client, f"{key}-50", virtual_clock, threads=50, seconds=10.0)
    assert alone["GetItem"] > 50
    assert fifty == alone


def test_a_thread_of_the_same_process_gets_a_released_lock_at_once(make_client, dynamodb, key, virtual_clock):
    client = make_client(dynamodb, clock=virtual_clock)
    lease = client.acquire(key)
    got: list[float] = []
    thread = start_waiter(
        virtual_clock, lambda: got.append(client.acquire(key, timeout=60) and virtual_clock.monotonic())
    )
    virtual_clock.advance(1.0)
    counter = RequestCounter(dynamodb)
    released_at = virtual_clock.monotonic()
    lease.release()
    thread.join(5)
    assert got == [released_at]  # no time passed: woken by the release, not by a look
    assert dict(counter.calls) == {"UpdateItem": 2}  # the release and the waiter's grant


def test_a_java_client_that_does_not_know_the_line_can_take_a_released_lock(
    make_client, dynamodb, table_name, key, virtual_clock
):
    holder = make_client(clock=virtual_clock)
    lease = holder.acquire(key)
    waiter = make_client(clock=virtual_clock)
    thread = start_waiter(virtual_clock, timing_out(lambda: waiter.acquire(key, timeout=0.5)))
    virtual_clock.advance(0.01)
    assert len(line_of(holder, key)) == 1
    holder_info = holder.get(key)
    lease.release()
    java = JavaLockClient(dynamodb, table_name)
    java.acquire_released(key)  # PutItem: the whole item anew, without the line
    assert holder_info is not None
    assert line_of(holder, key) == []
    run_until_done(virtual_clock, [thread], seconds=2)


def test_a_waiter_whose_entry_dynamodb_refuses_waits_outside_the_line(make_client, dynamodb, key, virtual_clock):
    """A join DynamoDB refuses as invalid (no room on an item whose data nears 400 KB) is no failure of the wait."""
    holder = make_client(clock=virtual_clock)
    lease = holder.acquire(key)
    waiter = make_client(dynamodb, clock=virtual_clock)

    def refuse_joins(request: Any, **_: Any) -> Any:
        if b'"window"' in request.body:  # a new entry of the line: a join, or the start of a line
            return error_response("ValidationException", 400, "Item size has exceeded the maximum allowed size")
        return None

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", refuse_joins)
    got: list[int] = []
    thread = start_waiter(virtual_clock, lambda: got.append(waiter.acquire(key, timeout=30).fencing_token))
    virtual_clock.advance(1.0)
    assert line_of(holder, key) == []
    lease.release()
    run_until_done(virtual_clock, [thread], seconds=5)
    assert got
    assert got[0] > lease.fencing_token


def test_a_granted_wait_leaves_no_seat_behind(make_client, key, virtual_clock):
    """A process forgets the seat of a key once its last waiter is done, granted or not."""
    holder = make_client(clock=virtual_clock)
    waiter = make_client(clock=virtual_clock, owner_name="waiter")
    for number in range(3):
        name = f"{key}-{number}"
        lease = holder.acquire(name)
        got: list[Any] = []
        thread = start_waiter(virtual_clock, lambda name=name, got=got: got.append(waiter.acquire(name, timeout=30)))
        virtual_clock.advance(0.05)
        assert line_of(holder, name) == ["waiter"]
        lease.release()
        run_until_done(virtual_clock, [thread], seconds=5)
        got[0].release()
    assert waiter.process_state.seats.waiting_keys() == set()


@pytest.mark.requires("in_process_backend")  # the in-memory store's faults
def test_a_join_whose_answer_was_lost_is_taken_out_when_the_waiter_gives_up(make_client, dynamodb, key, virtual_clock):
    """A join that landed without an answer is an entry of ours all the same: giving up takes it out, or it
    would head the line for a whole window, and nobody could take the released lock."""
    holder = make_client(clock=virtual_clock)
    lease = holder.acquire(key)
    waiter = make_client(dynamodb, clock=virtual_clock, owner_name="ghost")
    lost: list[int] = []

    def lose_join_answers(request: Any, **_: Any) -> Any:
        # Its joins (the first, and the last, sent at the deadline) land; their answers are lost.
        if b'"window"' in request.body and len(lost) < 2:
            lost.append(1)
            InMemoryDynamoDB().send(request)
            raise ReadTimeoutError(endpoint_url=f"injected:{request.url}")
        return None

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", lose_join_answers)
    thread = start_waiter(virtual_clock, timing_out(lambda: waiter.acquire(key, timeout=0.05), DynamoDBUnavailable))
    run_until_done(virtual_clock, [thread], seconds=2)
    assert len(lost) == 2  # both joins landed, and the waiter gave up without hearing of either
    lease.release()
    virtual_clock.advance(0.05)  # the give-up's leave (now or in the background) has had its time
    assert line_of(holder, key) == []
    assert make_client(clock=virtual_clock, owner_name="other").try_acquire(key) is not None


def test_two_waiters_of_one_process_giving_up_together_take_the_seat_out_of_line(
    make_client, key, virtual_clock, monkeypatch
):
    """Of two waiters of one process that give up together, one is the last out: it takes the entry out."""
    holder = make_client(clock=virtual_clock)
    lease = holder.acquire(key)
    waiter = make_client(clock=virtual_clock, owner_name="gave-up")
    both_done = threading.Barrier(2)
    leave = Turns.leave

    def leave_together(self: Turns, *args: Any) -> None:
        leave(self, *args)
        both_done.wait(5)  # both are done waiting before either departs: each still sees the other

    monkeypatch.setattr(Turns, "leave", leave_together)
    threads = [start_waiter(virtual_clock, timing_out(lambda: waiter.acquire(key, timeout=1))) for _ in range(2)]
    virtual_clock.advance(0.05)
    assert line_of(holder, key) == ["gave-up"]
    run_until_done(virtual_clock, threads, seconds=3)
    assert waiter.process_state.seats.waiting_keys() == set()
    assert line_of(holder, key) == []
    lease.release()


def test_a_coroutine_cancelled_while_its_join_is_in_flight_leaves_no_entry(make_client, dynamodb, key):
    """A cancelled coroutine whose join is in flight waits for its answer (one read time-out at most) before
    it gives up its turn, then takes the entry out: the join cannot land after the leave."""
    holder = make_client()
    lease = holder.acquire(key)
    waiter = make_client(dynamodb, owner_name="cancelled")
    joining, go_on = threading.Event(), threading.Event()

    def hold_the_join(request: Any, **_: Any) -> Any:
        if b'"window"' in request.body:
            joining.set()
            go_on.wait(5)  # the join is in flight
        return None

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", hold_the_join)

    async def cancel_while_joining() -> None:
        task = asyncio.ensure_future(waiter.aacquire(key, timeout=30))
        while not joining.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.1)
        assert not task.done()  # its turn, and its seat, are its own until the join is answered
        go_on.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_while_joining())
    lease.release()
    assert line_of(holder, key) == []
    assert make_client(owner_name="other").try_acquire(key) is not None


@pytest.mark.parametrize("refresh_period", [0.01, 0.1, 1.0, 18.0, 100.0, 10_000.0])
def test_a_waiter_refreshes_its_entry_within_the_window_others_read_of_it(refresh_period):
    """However long refresh_period is, a waiter refreshes its entry several times within the window others read."""
    timing = LineTiming.for_refresh_period(refresh_period)
    (read,) = parse_waiters({"M": {"id": entry("p", 0, timing.window)}})
    assert read.window == timing.window
    assert timing.line_look <= read.window / 5


@pytest.mark.requires("in_process_backend")  # the in-memory store's faults
def test_a_thread_interrupted_as_its_join_lands_takes_its_entry_out(make_client, dynamodb, key):
    """Ctrl-C (KeyboardInterrupt) during a join that landed: the wait ends, and its entry leaves the line with it."""
    holder = make_client()
    lease = holder.acquire(key)
    waiter = make_client(dynamodb, owner_name="interrupted")

    def interrupt_after_the_join(request: Any, **_: Any) -> Any:
        if b'"window"' in request.body:
            InMemoryDynamoDB().send(request)
            raise KeyboardInterrupt
        return None

    dynamodb.meta.events.register_first("before-send.dynamodb.UpdateItem", interrupt_after_the_join)
    with pytest.raises(KeyboardInterrupt):
        waiter.acquire(key, timeout=30)
    assert line_of(holder, key) == []
    assert waiter.process_state.seats.waiting_keys() == set()
    lease.release()
