"""A writer holding its item waits for the readers in place: each released, gone, or silent for its lease.

It waits only when its grant shows that readers may hold permits
(:mod:`..wire.readers_mark`): the item carries the mark, or the grant cannot
vouch for the item's past (a seeded token, a takeover, a lost answer).
Otherwise no reader can be in, and the writer sends nothing more.

The writer has already taken the write item (the single acquire), so every
reader arriving after that sees it and stays out (:mod:`.permit_round`):
the readers this waits for are those in place when the write item was
taken, and a reader that took a permit just before it, which gives the
permit back as soon as it sees the writer. A reader that stopped renewing
counts as gone once its version has stood for its lease on our clock (the
takeover rule), without a write: the writer never touches the readers' items.

The drain reads every reader there may be: its own set, the set of the count
stored with the mark (a reader of a larger set marked it) and the key past the
last (where a larger set shows). A held reader permit stating another count
than the writer's is refused (InvalidLockRequest), as a reader asking for
another count is: the writer lets go of its item and the mark stays, so no
writer clears it on a view of fewer readers than there are.

Request budget: none when the grant shows no mark; else one consistent
BatchGetItem of the reader set per look (with no reader in place, one in
all), and one UpdateItem taking the mark off once the readers are gone.

The interleavings (a reader R, a writer W): R marks after winning its permit,
W reads after its grant. R's mark landed before W's grant: W sees it and
waits for R. After: W holds the item, so R's mark fails and R gives its
permit back, unless W stopped renewing a lease ago, when R's new mark makes
W's clear (conditioned on the mark W saw) fail. W clears only after seeing
every reader gone, and a release of W's that never saw them gone leaves a
mark, so letting go never hides a reader from the next writer.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..aws import deadlines
from ..aws.store import Refused
from ..clock import Instant, Jitter, backoff, within_deadline
from ..exceptions import DynamoDBError, DynamoDBUnavailable, LockTimeout
from ..leases.lease import record_of
from ..wire import permits, readers_mark
from ..wire.item import describe_holder
from .permit_round import read_set

if TYPE_CHECKING:
    from ..acquiring.parts import EngineParts
    from ..leases.lease import Lease
    from ..wire.item import LockInfo
    from ..wire.layout import LockId


class ReadersDrain:
    """The wait of a writer for the readers in place; ``attempt`` returns the writer's lease once they are gone."""

    def __init__(
        self,
        parts: EngineParts,
        *,
        writer: Lease,
        what: str,
        count: int,
        reader_ids: Callable[[int], list[LockId]],
        deadline: float | None,
        jitter: Jitter = random.uniform,
    ) -> None:
        self.writer = writer
        self.deadline = deadline
        self.error: DynamoDBError | None = None
        self.readers: list[LockInfo] = []  # the readers in place at the last look
        self._parts = parts
        self._what = what  # for messages: "readers of 'report'"
        self._count = count
        self._record = record_of(writer)
        seen = readers_mark.ReadersSeen.of(self._record.grant_answer)
        stored = None if seen is None else seen.count
        # ``reader_ids(n)``: the keys of readers 0 to n-1; one more is the key past the last reader there may be.
        self._ids = reader_ids(max(count, stored or 0) + 1)
        self._mark = None if seen is None else seen.mark  # to take off the item once the readers are gone
        # Whether readers may be in: if not, the writer's grant is all (see the module's docstring).
        self.needed = seen is None or not seen.none_in
        if self.needed and self._mark is None:
            # The grant knew nothing and the item has no mark: until the readers are seen gone, the
            # writer's release leaves one, so that the next writer looks too.
            self._record.release_readers_mark = readers_mark.new_mark()
        self._jitter = jitter
        self._looks = 0

    def attempt(self) -> Lease | None:
        """One look at the readers: the writer's lease when none is in place; LockLost if the writer's lease ended."""
        self.writer.ensure_held()
        self._looks += 1
        left = None if self.deadline is None else self.deadline - self._parts.clock.monotonic()
        found = read_set(self._parts, self._ids, left)
        self.error = found if isinstance(found, DynamoDBUnavailable) else None
        if isinstance(found, DynamoDBUnavailable):
            return None
        seen = Instant.read(self._parts.clock)
        self.readers = []
        for index, lock_id in enumerate(self._ids):
            current = found[lock_id]
            if current is None or not self._parts.observations.saw(lock_id, current, seen):
                continue  # no item, or released
            observation = self._parts.observations.get(lock_id)
            if observation is not None and observation.may_take_over(seen.monotonic):
                continue  # its reader stopped renewing a lease ago
            other = permits.other_count(current, self._count)
            if other is not None:
                raise permits.count_refused(self._what, other, lock_id[0], self._count, holder=current)
            if index < self._count:  # past our set, an item without a count is a plain lock's: no reader
                self.readers.append(current)
        if self.readers:
            return None
        self._record.release_readers_mark = None
        self._clear_mark(left)
        return self.writer

    def _clear_mark(self, left: float | None) -> None:
        """Take the mark off (best effort: left on, the next writer only reads the readers once more)."""
        if self._mark is None:
            return
        try:
            with deadlines.within(left):
                self._parts.store.update(readers_mark.clear(self._parts.layout, self.writer.lock_id, self._mark))
        except (Refused, DynamoDBError):
            pass  # a reader marked it since (its writer lost the item meanwhile), or no answer

    def delay(self, now: float) -> float | None:
        """Until the next look: backing off up to ``refresh_period``, waking when a silent reader's lease ends."""
        delay = backoff(self._looks, cap=self._parts.refresh_period, jitter=self._jitter)
        return within_deadline(self._parts.observations.wake_for_takeover(delay, self._ids, now), self.deadline, now)

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
