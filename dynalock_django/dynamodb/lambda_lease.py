"""A lease for one AWS Lambda invocation: no heartbeat thread, sized to the time Lambda gives the invocation.

    client = LockClient(boto3.client("dynamodb"), "locks")     # at module level: once per cold start

    def handler(event, context):
        with lambda_lease(client, f"order-{event['order_id']}", context, needs=5.0) as lease:
            lease.ensure_held()                                 # before each write it fences
            ship(event, fencing_token=lease.fencing_token)

Lambda freezes an execution environment between invocations (and may thaw it much later for the
next one), so a heartbeat thread cannot keep a lease: nothing runs while it is frozen. Instead the
lease lasts for the rest of the invocation plus ``margin``: one conditional write takes it (the
lease counted from when that write was sent), none renews it, one releases it before the handler
returns. Lambda stops the invocation by its deadline, so the work never outlives the lease.

A function killed at its timeout leaves its item unreleased. The protocol's clock-free rule would
keep the key from the next invocations for one more whole lease of watching (up to 15 minutes);
instead, for items a ``lambda_lease`` wrote (its owner name ends in :data:`OWNER_MARK`), the next
``lambda_lease`` trusts the item's stamp: the write's wall-clock time (``sentAt``) plus its lease is
the holder's deadline plus ``margin``, and once that plus ``max_clock_skew`` has passed on this
invocation's wall clock, the holder's lease has run out on its own clock (if the two clocks differ by
at most ``max_clock_skew``: Lambda's are kept by Amazon Time Sync, within milliseconds). It then takes
the key over with one write conditioned on the record version it read: if anyone wrote the item
since, nothing is taken. Other holders' items keep the clock-free rule.

The lease is the protocol's detached kind (``keep_alive=False``): its ``remaining()``,
``is_held()`` and ``ensure_held()`` read this process's monotonic clock, which runs on while the
environment is frozen, so code that wakes holding it finds it expired and must not trust it; the
block's end then raises LockLost. That rests on an assumption: that the monotonic clock counts the
time the environment was frozen. If a runtime's does not (a paused micro-VM, an environment restored
from a SnapStart snapshot), a thawed holder believes its lease longer than it is: take no lease before
a snapshot, and let the fencing token, checked by the data store, be what refuses a late write.
Writes it protects carry ``lease.fencing_token`` for the data store to check: a holder stopped
between its check and its write is refused there once a newer holder wrote.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar

from .acquiring.observations import clock_bound_wait
from .exceptions import InvalidLockRequest, LockLost, LockNotAcquired
from .leases.block_end import release_at_block_end
from .leases.lease import Lease
from .wire.item import LockInfo
from .wire.layout import LockId

if TYPE_CHECKING:
    from .lock_client import LockClient

# Seconds the lease outlives the invocation's deadline: Lambda's stop of a timed-out function is not instant.
DEFAULT_MARGIN = 1.0

# Lambda's longest invocation (15 minutes): a context that says more is not Lambda's, and its lease is held to this.
MAX_INVOCATION = 900.0

# The most two invocations' wall clocks are assumed to differ by (Lambda's: Amazon Time Sync, milliseconds apart).
DEFAULT_CLOCK_SKEW = 1.0

# How a lambda_lease's owner name ends: the mark of an item whose stamp the next lambda_lease trusts.
OWNER_MARK = " (lambda_lease)"

# Past a stamp's end, how much longer to wait: a wait that ends on the very moment could read it a hair early.
_PAST_THE_STAMP = 0.001

Result = TypeVar("Result")


class LambdaContext(Protocol):
    """What a lease needs of Lambda's context object."""

    def get_remaining_time_in_millis(self) -> int: ...


@contextlib.contextmanager
def lambda_lease(
    client: LockClient,
    key: str,
    context: LambdaContext,
    *,
    needs: float = 0.0,
    margin: float = DEFAULT_MARGIN,
    timeout: float | None = None,
    sort_key: str | None = None,
    data: bytes | None = None,
    max_clock_skew: float | None = DEFAULT_CLOCK_SKEW,
) -> Iterator[Lease]:
    """Hold ``key`` for the rest of this invocation (plus ``margin``) and release it at the block's end.

    ``needs``: the seconds the block's work (its release included) needs; with less left of the
    invocation, nothing is asked of DynamoDB and LockNotAcquired says so. ``timeout``: how long to wait
    for a key another holder has (None, the default: not at all, one refused write and LockNotAcquired),
    capped to leave ``needs``; an acquire that waited until less was left releases at once and says so
    too. A lease taken after waiting lasts the wait longer than the invocation (it was sized before the
    wait): the key is free that much later after a timed-out invocation. A block that ends after its
    lease ran out on this process's clock (a frozen, thawed function) raises LockLost: its work was not
    protected to the end.

    ``max_clock_skew``: the most this invocation's wall clock differs from the one that wrote a
    ``lambda_lease``'s item; that item is taken over once its holder's deadline plus ``margin`` plus
    this has passed on this invocation's clock (None: only after the protocol's lease of watching).
    """
    _check_seconds("needs", needs, allow_zero=True)
    _check_seconds("margin", margin, allow_zero=False)
    if max_clock_skew is not None:
        _check_seconds("max_clock_skew", max_clock_skew, allow_zero=True)
    left = _seconds_left(context)
    if timeout is not None:
        _check_seconds("timeout", timeout, allow_zero=True)
    wait = 0.0 if timeout is None else min(timeout, max(0.0, left - needs))
    _refuse_if_short(key, left, needs)
    options = _LeaseOptions(
        data=data,
        owner_name=client.owner_name + OWNER_MARK,
        lease_duration=left + margin,
        keep_alive=False,
    )
    lease = _take(client, (key, sort_key), wait, max_clock_skew, options)
    try:
        _refuse_if_short(key, _seconds_left(context), needs)
    except BaseException:  # too little left, or a context that no longer answers: the lease is not kept
        lease.release(best_effort=True)
        raise
    try:
        yield lease
    except GeneratorExit:
        # The block was abandoned, never exited, and is being collected: send nothing. A request from the
        # garbage collector runs inside whatever the thread was doing (a request of its own, under a lock
        # it holds) and can deadlock it; the lease, never renewed (keep_alive=False), frees itself.
        raise
    except BaseException as error:
        release_at_block_end(lambda: lease.release(best_effort=not lease.is_held()), error, [lease])
        raise
    ran_out = not lease.is_held()
    release_at_block_end(lambda: lease.release(best_effort=ran_out), None, [lease])
    if ran_out:
        raise LockLost(
            f"The lease on {key!r} ran out before the block ended (the function was frozen, or paused, past "
            f"its {lease.lease_duration:.1f} s lease): its work was not protected to the end. Writes fenced with "
            f"token {lease.fencing_token} are refused once a newer holder wrote.",
            lease.lost_to,
        )


def lambda_locked(
    client: LockClient,
    key: str | Callable[[Any], str],
    *,
    needs: float = 0.0,
    margin: float = DEFAULT_MARGIN,
    timeout: float | None = None,
    max_clock_skew: float | None = DEFAULT_CLOCK_SKEW,
) -> Callable[[Callable[[Any, Any, Lease], Result]], Callable[[Any, LambdaContext], Result]]:
    """The decorator form: ``handler(event, context, lease)`` runs inside :func:`lambda_lease`.

    ``key`` is the key, or a function of the event that gives it. Lambda calls the decorated
    ``handler(event, context)``.
    """

    def decorate(handler: Callable[[Any, Any, Lease], Result]) -> Callable[[Any, LambdaContext], Result]:
        @functools.wraps(handler)
        def locked(event: Any, context: LambdaContext) -> Result:
            name = key(event) if callable(key) else key
            with lambda_lease(
                client, name, context, needs=needs, margin=margin, timeout=timeout, max_clock_skew=max_clock_skew
            ) as lease:
                return handler(event, context, lease)

        return locked

    return decorate


class _LeaseOptions(TypedDict):
    data: bytes | None
    owner_name: str
    lease_duration: float
    keep_alive: bool


def _take(client: LockClient, lock_id: LockId, wait: float, skew: float | None, options: _LeaseOptions) -> Lease:
    """The key within ``wait`` seconds: free, released, taken from a lambda_lease past its stamp, or by the protocol.

    One write when the key is free. Else, while another lambda_lease's item is not yet past its stamp's
    end, the protocol's wait (which takes a key released meanwhile) until then, and then one write
    conditioned on the version read; for any other holder, the protocol's wait for the rest.
    """
    key, sort_key = lock_id
    clock = client.clock
    deadline = clock.monotonic() + wait
    try:
        return client.acquire(key, sort_key=sort_key, timeout=0.0, **options)
    except LockNotAcquired as refused:
        last = refused
    while True:
        holder = last.holder
        ends_in = _stamp_ends_in(holder, clock.time(), skew)
        if holder is not None and ends_in is not None and ends_in <= 0:
            try:
                return client.take_over(holder, unchanged=True, **options)
            except LockNotAcquired as changed:  # written since it was read: look again at what stands now
                now = changed.holder
                if now is None or now.is_released:  # freed meanwhile: taken as a free key is
                    left = max(0.0, deadline - clock.monotonic())
                    return client.acquire(key, sort_key=sort_key, timeout=left, **options)
                if now.raw_version == holder.raw_version:
                    raise  # refused though unchanged (an item not of this protocol's making): not again and again
                last = changed
                continue
        left = deadline - clock.monotonic()
        if left <= 0:
            raise last
        until_stamp = left if ends_in is None else min(left, ends_in + _PAST_THE_STAMP)
        try:
            return client.acquire(key, sort_key=sort_key, timeout=until_stamp, **options)
        except LockNotAcquired as refused:
            if until_stamp >= left:
                raise
            last = refused


def _stamp_ends_in(holder: LockInfo | None, wall_now: float, skew: float | None) -> float | None:
    """Seconds until a lambda_lease's ``holder`` may be taken over by its stamp; None where the rule does not apply."""
    if holder is None or holder.is_released or not (holder.owner_name or "").endswith(OWNER_MARK):
        return None
    return clock_bound_wait(holder, wall_now, skew)


def _seconds_left(context: LambdaContext) -> float:
    try:
        millis = context.get_remaining_time_in_millis()
    except AttributeError:
        raise InvalidLockRequest(
            f"lambda_lease needs the Lambda context (the handler's second argument), not {type(context).__name__}: "
            "it asks it how long the invocation has left (get_remaining_time_in_millis())."
        ) from None
    if isinstance(millis, bool) or not isinstance(millis, int | float) or not math.isfinite(millis):
        raise InvalidLockRequest(f"get_remaining_time_in_millis() gave {millis!r}, not a number of milliseconds.")
    return min(max(0.0, millis / 1000.0), MAX_INVOCATION)


def _refuse_if_short(key: str, left: float, needs: float) -> None:
    if left <= needs:
        raise LockNotAcquired(
            f"Not starting the work under {key!r}: {left:.3f} s are left of this invocation and it needs "
            f"{needs:.3f} s. Raise the function's timeout, or start the work in a new invocation."
        )


def _check_seconds(name: str, value: object, *, allow_zero: bool) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not allow_zero)
    ):
        bound = "0 or more" if allow_zero else "more than 0"
        raise InvalidLockRequest(f"lambda_lease's {name} must be a finite number of seconds, {bound}, not {value!r}.")
