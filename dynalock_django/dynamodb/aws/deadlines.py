"""Deadlines inside one boto3 call: botocore never retries a time-out, nor starts a retry past the caller's deadline.

botocore retries inside a call: with the recommended config (connect 1 s,
read 2 s, 3 attempts) one call to an endpoint that accepts connections and
never answers blocks 6 s plus backoff, whatever the caller's timeout. A hook
on botocore's ``needs-retry`` event, the first to run, ends that loop:

- after a time-out (connect or read): waiting once more as long says nothing
  new, and the protocol, not botocore, knows whether that write may have
  landed and whether the caller's deadline allows another request;
- when the retry (after its longest backoff) would start past the deadline
  the calling thread set with :func:`within`.

So each attempt starts before the deadline, and a call ends by its deadline
plus one attempt's time-outs. The hook ends the loop by raising what the
last attempt got (its exception, or the error it answered as ``ClientError``),
as botocore would have after its last attempt.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from .botocore_errors import THROTTLING_CODES, timed_out

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# botocore's standard mode waits at most min(2 ** (attempt - 1), 20) s before retry `attempt`; legacy less.
_MAX_BACKOFF = 20.0

# The calling thread's deadline (time.monotonic); math.inf: a call of ours without one; None: not our call
# (the hook leaves a boto3 client shared with the application alone for the application's own calls).
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("dynalock_deadline", default=None)


class _DeadlineBlock:
    """A block with the calling thread's deadline set (None: keep the one set, or no block of ours has set one).

    A class, not a generator: every request enters one or two (``ours`` inside an attempt's ``within``),
    and a generator's context manager costs the uncontended acquire a few microseconds each.
    """

    __slots__ = ("_at", "_token")

    def __init__(self, at: float | None) -> None:
        self._at = at
        self._token: contextvars.Token[float | None] | None = None

    def __enter__(self) -> None:
        if self._at is not None:
            self._token = _deadline.set(self._at)

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _deadline.reset(self._token)


def within(seconds: float | None) -> contextlib.AbstractContextManager[None]:
    """In this block, botocore starts no retry more than ``seconds`` from now (None: no deadline).

    Seconds, not an instant: the caller's clock may not be ``time.monotonic``.
    """
    return _DeadlineBlock(math.inf if seconds is None else time.monotonic() + seconds)


def ours() -> contextlib.AbstractContextManager[None]:
    """A call of the lock client: the rule applies (with the deadline of an enclosing :func:`within`, if any)."""
    return _DeadlineBlock(math.inf) if _deadline.get() is None else _KEPT


# The block that keeps the deadline set: it sets nothing, so every thread may share it.
_KEPT = _DeadlineBlock(None)


def longest_backoff(attempts: int) -> float:
    """The longest botocore may sleep after ``attempts`` attempts, before the next."""
    return min(2.0 ** max(attempts - 1, 0), _MAX_BACKOFF)


def may_retry(*, attempts: int, timed_out: bool, now: float, deadline: float) -> bool:
    """The rule: never after a time-out; never when the retry could start after the deadline."""
    return not timed_out and now + longest_backoff(attempts) < deadline


def install(dynamodb: DynamoDBClient) -> None:
    """Put the rule in front of botocore's own retry handler on this client (once per client)."""
    dynamodb.meta.events.register_first("needs-retry.dynamodb", _stop_retries, unique_id="dynalock-deadlines")


def _stop_retries(
    *, attempts: int, caught_exception: BaseException | None, response: Any, operation: Any, **_: Any
) -> None:
    deadline = _deadline.get()
    if deadline is None:
        return  # not our call
    if caught_exception is not None:
        no_answer = timed_out(caught_exception)
        if not may_retry(attempts=attempts, timed_out=no_answer, now=time.monotonic(), deadline=deadline):
            raise caught_exception
    elif (
        response is not None
        and response[0].status_code >= 300  # a success (every answer is asked, a success first of all) is not retried
        and _retryable(*response)
        and not may_retry(attempts=attempts, timed_out=False, now=time.monotonic(), deadline=deadline)
    ):
        raise ClientError(response[1], operation.name)
    # Otherwise botocore's handler decides: an answer it does not retry (a success, a refusal) goes its normal way.


def _retryable(http: Any, parsed: dict[str, Any]) -> bool:
    """An answer that is no success botocore may retry: a 5xx or throttling (it parses an error only from 301 up)."""
    return bool(http.status_code >= 500 or str(parsed.get("Error", {}).get("Code", "")) in THROTTLING_CODES)
