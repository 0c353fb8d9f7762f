"""A writer holding its item waits for the readers in place: each released, gone, or silent for its lease.

The writer has already taken the write item (the single acquire), so every
reader arriving after that sees it and stays out (:mod:`.permit_round`):
the readers this waits for are those in place when the write item was
taken, and a reader that took a permit just before it, which gives the
permit back as soon as it sees the writer. A reader that stopped renewing
counts as gone once its version has stood for its lease on our clock (the
takeover rule), without a write: the writer never touches the readers' items.

Request budget: one consistent BatchGetItem of the reader set per look;
with no reader in place, one in all.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..aws import deadlines
from ..clock import Instant
from ..exceptions import CircuitOpen, DynamoDBUnavailable, LockTimeout
from ..wire.item import describe_holder
from .plan import FIRST_POLL_SECONDS, Jitter

if TYPE_CHECKING:
    from ..aws.store import LockStore
    from ..clock import Clock
    from ..exceptions import DynamoDBError
    from ..leases.lease import Lease
    from ..wire.item import LockInfo
    from ..wire.layout import LockId
    from .observations import Observations


class ReadersDrain:
    """The wait of a writer for the readers in place; ``attempt`` returns the writer's lease once they are gone."""

    def __init__(
        self,
        *,
        writer: Lease,
        reader_ids: Sequence[LockId],
        store: LockStore,
        observations: Observations,
        clock: Clock,
        refresh_period: float,
        deadline: float | None,
        jitter: Jitter = random.uniform,
    ) -> None:
        self.writer = writer
        self.deadline = deadline
        self.error: DynamoDBError | None = None
        self.readers: list[LockInfo] = []  # the readers in place at the last look
        self._ids = list(reader_ids)
        self._store = store
        self._observations = observations
        self._clock = clock
        self._refresh_period = refresh_period
        self._jitter = jitter
        self._looks = 0

    def attempt(self) -> Lease | None:
        """One look at the readers: the writer's lease when none is in place; LockLost if the writer's lease ended."""
        self.writer.ensure_held()
        self._looks += 1
        left = None if self.deadline is None else self.deadline - self._clock.monotonic()
        try:
            with deadlines.within(left):
                found = self._store.read_many(self._ids)
        except CircuitOpen:
            raise
        except DynamoDBUnavailable as unavailable:
            self.error = unavailable
            return None
        self.error = None
        seen = Instant.read(self._clock)
        self.readers = []
        for lock_id in self._ids:
            current = found[lock_id]
            if current is None or not self._observations.saw(lock_id, current, seen):
                continue  # no item, or released
            observation = self._observations.get(lock_id)
            if observation is not None and observation.may_take_over(seen.monotonic):
                continue  # its reader stopped renewing a lease ago
            self.readers.append(current)
        return self.writer if not self.readers else None

    def delay(self, now: float) -> float | None:
        """Until the next look: backing off up to ``refresh_period``, waking when a silent reader's lease ends."""
        delay = min(self._refresh_period, FIRST_POLL_SECONDS * 2.0 ** min(self._looks, 30))
        delay *= self._jitter(0.5, 1.0)
        for lock_id in self._ids:
            observation = self._observations.get(lock_id)
            if observation is not None and observation.takeover_at >= now:
                delay = min(delay, observation.takeover_at - now + 0.001)
        if self.deadline is not None:
            left = self.deadline - now
            if left <= 0:
                return None
            delay = min(delay, left)
        return delay

    def gave_up(self, timeout: float | None) -> DynamoDBError | LockTimeout:
        if self.error is not None:
            return self.error
        readers = "; ".join(describe_holder(reader) for reader in self.readers)
        return LockTimeout(
            f"Timed out after {timeout:g}s waiting for {len(self.readers)} reader(s) in place to leave "
            f"({readers}); new readers were kept out meanwhile.",
            self.readers[0] if self.readers else None,
            holders=self.readers,
        )
