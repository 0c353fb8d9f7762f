"""Releasing what writes whose answers were lost may have left: an acquire that ends without the lock."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..aws import deadlines
from ..aws.store import Refused
from ..clock import start_thread
from ..exceptions import DynamoDBError
from ..wire import writes
from ..wire.conditions import KeptAlive
from ..wire.writes import Stamp

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..clock import Clock
    from ..options import AcquireOptions
    from ..wire.layout import LockId, TableLayout
    from .plan import Acquisition, UnansweredWrites

logger = logging.getLogger("dynalock_django.acquire")


class UnansweredCleanup:
    """Best-effort releases of the versions an acquire may have written but never heard back about."""

    def __init__(self, store: LockStore, layout: TableLayout, clock: Clock) -> None:
        self._store = store
        self._layout = layout
        self._clock = clock

    def clean_up(self, plan: Acquisition, options: AcquireOptions) -> None:
        """Release what unanswered writes may have left: now if the deadline allows, else in the background."""
        if not plan.unanswered:
            return
        left = plan.seconds_left(self._clock.monotonic())
        if left is None or left > 0:
            with deadlines.within(left):
                self.abandon(plan.lock_id, plan.unanswered, options)
            return
        in_background(self._clock, functools.partial(self.abandon, plan.lock_id, plan.unanswered.copy(), options))
        plan.unanswered.clear()

    def abandon(self, lock_id: LockId, unanswered: UnansweredWrites, options: AcquireOptions) -> None:
        """Best effort: release versions we may have written but never heard back about."""
        if not unanswered:
            return
        stamp = Stamp.new(options.owner_name, options.lease_duration, self._clock)
        # Only this process knows these versions, whatever kind of lease they would have granted.
        holding = KeptAlive(options.owner_name, tuple(unanswered))
        try:
            self._store.update(writes.release(self._layout, lock_id, stamp, holding=holding))
            logger.info("Released %r, written by an attempt whose answer was lost", lock_id[0])
        except (Refused, DynamoDBError) as error:
            logger.debug("Could not clean up unanswered writes to %r: %s", lock_id[0], error)
        unanswered.clear()


def in_background(clock: Clock, cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` (a best-effort release) on a thread of its own: no caller waits for it."""
    start_thread(clock, cleanup, "dynalock-cleanup")
