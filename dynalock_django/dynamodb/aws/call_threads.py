"""The few threads a client's coroutines send their DynamoDB requests from: one short boto3 call at a time each.

boto3 blocks, and an async client (aiobotocore) pins botocore to one
release, against boto3's own pin: so a coroutine hands each short call
(a write, a read, one step of an acquire) to these threads and awaits it;
waiting between calls is ``asyncio.sleep`` on the event loop, never a thread.
The pool is the client's own, not the loop's default executor, so lock
traffic never starves ``sync_to_async(thread_sensitive=False)``. It is as
large as botocore's connection pool (``max_pool_connections``, 10 by
default): more threads would only queue for a connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

from ..exceptions import ClientClosed

T = TypeVar("T")

CALL_THREADS = 10


class CallThreads:
    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=CALL_THREADS, thread_name_prefix=name)

    async def run(
        self,
        call: Callable[[], T],
        *,
        if_abandoned: Callable[[T], object] | None = None,
        even_if_cancelled: bool = False,
        finish_first: bool = False,
    ) -> T:
        """``call()`` on one of the threads; ``if_abandoned(result)`` runs there if the caller was cancelled meanwhile.

        A call that has started cannot be stopped: what it won (a lease) is
        handed to ``if_abandoned`` (to release it) instead of being lost. A
        call still queued is dropped when its caller is cancelled, unless
        ``even_if_cancelled`` (a release or a renewal: dropping it would leave
        the lock held, by a lease nobody will release). ``finish_first``: a
        caller cancelled while the call runs waits for its end (its own
        deadline bounds it) before it is cancelled, so that what the call
        touches is nobody else's until then.
        """
        try:
            # In the caller's context: its current span is the parent of the request's (OpenTelemetry).
            future = self._executor.submit(contextvars.copy_context().run, call)
        except RuntimeError:  # shut down: the client was closed
            raise ClientClosed("The lock client is closed; create a new LockClient.") from None
        answer = asyncio.wrap_future(future)
        try:
            return await (asyncio.shield(answer) if even_if_cancelled else answer)
        except asyncio.CancelledError:
            if if_abandoned is not None:
                future.add_done_callback(lambda done: self._hand_back(done, if_abandoned))
            if finish_first and not future.cancel():  # it has started (a queued call is dropped)
                await _finished(future)
            raise

    def _hand_back(self, done: concurrent.futures.Future[T], if_abandoned: Callable[[T], object]) -> None:
        """Off the event loop: a call that finished as its caller was cancelled calls back here, on the loop."""
        if done.cancelled() or done.exception() is not None:
            return
        result = done.result()
        try:
            self._executor.submit(if_abandoned, result)
        except RuntimeError:  # closed meanwhile: a thread of its own, as the release must still be sent
            threading.Thread(target=if_abandoned, args=(result,), name="dynalock-hand-back", daemon=True).start()

    def shutdown(self) -> None:
        """No more calls; those already queued still run (a close may come from one of these threads)."""
        self._executor.shutdown(wait=False)


async def _finished(future: concurrent.futures.Future[T]) -> None:
    """Wait for a started call to end, whatever it ends with, through any further cancellation of the caller."""
    ended = asyncio.wrap_future(future)
    while not ended.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({ended})
    if not ended.cancelled():
        ended.exception()  # retrieved: its failure is not the caller's any more (it was cancelled)
