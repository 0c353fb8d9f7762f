"""Random nested programs of one asyncio task mixing sync and async reentrant acquires, releases and exceptions.

Hypothesis draws a program: blocks nested in blocks, each taking the lock one of four ways
(sync or awaitable; acquire or try), giving it back with another (``release``, ``arelease``, the end of
a ``with`` block), and maybe raising on its way out; inside a block, probes: a plain acquire (sync,
awaitable, a try, a group), and time passing on the virtual clock while the heartbeat renews. Run on the
in-process store, every step checks what reentrancy promises:

- the lock is released exactly when the depth returns to 0, and by that release's one request;
- a nested acquire and an inner release send no request, and every lease of a hold has its token;
- a plain acquire by the holder is WouldDeadlock with no request and no time passed (the virtual clock
  does not move: well within 10 ms);
- the heartbeat renews one hold as one key whatever its depth, and after the final release nothing.
"""

from __future__ import annotations

import asyncio
import math
from contextlib import suppress
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalock_django.dynamodb import Lease, LockClient, VirtualClock, WouldDeadlock

from ...dynamodb_support import HEARTBEAT, LEASE, RequestCounter, make_dynamodb, short_lease_client, unique

TAKES = ("acquire", "try_acquire", "aacquire", "atry_acquire")
GIVES = ("release", "arelease", "with")
PROBES = ("acquire", "aacquire", "try_acquire", "atry_acquire", "acquire_many", "aacquire_many", "advance")


class Boom(Exception):
    """What a block of the program raises on its way out."""


@dataclass(frozen=True)
class Block:
    take: str
    give: str
    raises: bool
    body: tuple[Block | str, ...] = ()


blocks = st.recursive(
    st.builds(Block, st.sampled_from(TAKES), st.sampled_from(GIVES), st.booleans()),
    lambda inner: st.builds(
        Block,
        st.sampled_from(TAKES),
        st.sampled_from(GIVES),
        st.booleans(),
        st.lists(st.one_of(inner, st.sampled_from(PROBES)), max_size=4).map(tuple),
    ),
    max_leaves=10,
)


@dataclass
class Run:
    client: LockClient
    clock: VirtualClock
    counter: RequestCounter
    key: str
    depth: int = 0
    outer: Lease | None = None
    tokens: list[int] = field(default_factory=list)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=st.lists(blocks, min_size=1, max_size=3))
def test_a_random_nested_program_keeps_every_promise_of_reentrancy(endpoint_url, table_name, program):
    dynamodb = make_dynamodb(endpoint_url)
    clock = VirtualClock(monotonic=100.0, wall=1_000.0)
    run = Run(short_lease_client(dynamodb, table_name, clock=clock), clock, RequestCounter(dynamodb), unique("re"))
    try:
        asyncio.run(_program(run, program))
        assert run.tokens == sorted(set(run.tokens))  # each outermost acquire a new, greater token
        run.counter.reset()
        clock.advance(2 * LEASE)  # eight heartbeat periods
        assert run.counter.total == 0
        assert not run.counter.renewals  # no renewal after the final release
    finally:
        run.client.close(release=False)


async def _program(run: Run, program: list[Block]) -> None:
    for block in program:
        with suppress(Boom):
            await _block(run, block)
        assert run.depth == 0
        assert run.client.held_leases() == []


async def _block(run: Run, block: Block) -> None:
    run.counter.reset()
    lease = await _take(run, block.take)
    if run.depth == 0:
        assert dict(run.counter.calls) == {"UpdateItem": 1}
        assert not lease.reentered
        run.outer = lease
        run.tokens.append(lease.fencing_token)
    else:
        assert run.counter.total == 0
        assert lease.reentered
        assert lease.fencing_token == run.tokens[-1]
    run.depth += 1
    raised: BaseException | None = None
    try:
        for step in block.body:
            with suppress(Boom):
                await (_block(run, step) if isinstance(step, Block) else _probe(run, step))
        if block.raises:
            raise Boom
    except BaseException as error:
        raised = error
        raise
    finally:
        run.counter.reset()
        await _give(lease, block.give, raised)
        run.depth -= 1
        _check_released_at_depth_zero(run)


def _check_released_at_depth_zero(run: Run) -> None:
    assert run.outer is not None
    if run.depth == 0:
        assert dict(run.counter.calls) == {"UpdateItem": 1}
        assert run.outer.state == "released"
        assert run.client.held_leases() == []
    else:
        assert run.counter.total == 0
        assert run.outer.is_held()
        assert run.client.held_leases() == [run.outer]


async def _take(run: Run, how: str) -> Lease:
    client, key = run.client, run.key
    lease: Lease | None
    if how == "acquire":
        lease = client.acquire(key, reentrant=True, timeout=None)
    elif how == "try_acquire":
        lease = client.try_acquire(key, reentrant=True)
    elif how == "aacquire":
        lease = await client.aacquire(key, reentrant=True, timeout=None)
    else:
        lease = await client.atry_acquire(key, reentrant=True)
    assert lease is not None
    return lease


async def _give(lease: Lease, how: str, raised: BaseException | None) -> None:
    if how == "release":
        lease.release()
    elif how == "arelease":
        await lease.arelease()
    else:
        lease.__exit__(type(raised) if raised else None, raised, None)


async def _probe(run: Run, probe: str) -> None:
    client, key = run.client, run.key
    run.counter.reset()
    started = run.clock.monotonic()
    if probe == "advance":
        seconds = 1.5 * LEASE  # held past its lease: renewed
        run.clock.advance(seconds)
        assert 0 < run.counter.renewals["UpdateItem"] <= math.ceil(seconds / HEARTBEAT) + 1  # one hold, one a beat
        assert set(run.counter.renewals) <= {"UpdateItem"}
        assert run.counter.total == 0  # nothing but the heartbeat
        assert run.outer is not None
        assert run.outer.is_held()
        return
    if probe == "try_acquire":
        assert client.try_acquire(key) is None
    elif probe == "atry_acquire":
        assert await client.atry_acquire(key) is None
    else:
        with pytest.raises(WouldDeadlock, match="reentrant=True"):
            if probe == "acquire":
                client.acquire(key, timeout=None)
            elif probe == "aacquire":
                await client.aacquire(key, timeout=None)
            elif probe == "acquire_many":
                client.acquire_many([key, f"{key}-other"], timeout=None)
            else:
                await client.aacquire_many([key, f"{key}-other"], timeout=None)
    assert run.counter.total == 0
    assert run.clock.monotonic() == started
