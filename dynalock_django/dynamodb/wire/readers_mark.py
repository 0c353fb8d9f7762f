"""The write item's mark that readers may hold permits: ``readersMayHold``, so a writer reads the set only then.

A reader that won a permit sets the mark on the write item (a new random id
each time) with the condition that no writer holds it; a writer's grant
returns the whole item (``ALL_NEW``) and reads the reader set only when the
mark is there or the grant cannot vouch for the item's past. Every write of
ours to a lock item is an UpdateItem that leaves attributes it does not
name alone, so grants, heartbeats and releases keep the mark; the AWS Java
client ignores it (and its ``PutItem`` drops it, which the grant notices:
see :meth:`ReadersSeen.of`).

Why a grant without the mark may skip the read (docs/protocol.md, "Readers
and writers"): a reader keeps its permit only after its mark landed while
no writer held the item (or the item did not exist). The mark goes away only
by :func:`clear`, conditioned on the very id a writer saw at its grant, sent
after that writer saw every reader gone: a reader that got in since wrote
another id, and the clear fails. An item that vanished (TTL, a delete, the
Java client's release) or was rewritten whole (the Java client's acquire)
comes back without our fencing token, so the next grant seeds the token: such
a grant, a takeover, or a grant recovered from a lost answer knows nothing,
and reads; until it has seen the set empty, its release writes the mark.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import item, permits
from .expressions import Expressions
from .item import READERS_COUNT as READERS_COUNT
from .item import READERS_MAY_HOLD as READERS_MAY_HOLD

if TYPE_CHECKING:
    from .item import GrantAnswer
    from .layout import LockId, TableLayout

# READERS_MAY_HOLD: the mark. READERS_COUNT: the count of the set whose reader marked last (N): a writer reads
# that many readers even when it was given fewer, so that a smaller ``max_readers`` cannot miss readers of a
# larger set (they are refused instead). Both are named in item.py, whose LockInfo shows the count.


def new_mark() -> str:
    """A mark's value: random, so that a writer's clear names the very mark it saw."""
    return str(uuid.uuid4())


@dataclass(frozen=True)
class ReadersSeen:
    """What a writer's grant tells about the readers: ``known`` False means the item's past is unknown."""

    mark: str | None  # the mark on the granted item (None: none)
    known: bool
    count: int | None = None  # the count of the set whose reader marked it (None: not stored)

    @property
    def none_in(self) -> bool:
        """No reader can be in: the item kept our attributes since the last writer that saw the set empty."""
        return self.known and self.mark is None

    @classmethod
    def of(cls, answer: GrantAnswer | None) -> ReadersSeen | None:
        """What a writer's grant tells of the readers, from the item it wrote (``ALL_NEW``); None: no answer
        (a grant recovered from a lost answer knows nothing).

        A token equal to the stamp's ``wall_ms + 1`` was seeded by this grant: the item had no
        token of ours (new, deleted, or rewritten by the Java client); ``wall_ms``
        itself, a token that was not a number was overwritten. A takeover's
        holder died between its grant and its drain. In all three cases the
        mark may be missing while readers are in, so the grant knows nothing.
        """
        if answer is None:
            return None
        granted, wall_ms, taken_over = answer
        stored = granted.get(READERS_MAY_HOLD)
        mark = stored.get("S") if isinstance(stored, dict) else None
        if stored is not None and not isinstance(mark, str):
            return cls(None, known=False)  # a mark of another shape: somebody else's, trust nothing
        count = _count(granted.get(READERS_COUNT))
        try:
            token = int(granted[item.FENCING_TOKEN]["N"])
        except (KeyError, TypeError, ValueError):
            return cls(mark, known=False, count=count)
        return cls(mark, known=not taken_over and token not in (wall_ms, wall_ms + 1), count=count)


def _count(stored: object) -> int | None:
    """A stored count within what a set may have; anything else (hostile, malformed) counts as none stored."""
    text = stored.get("N") if isinstance(stored, dict) else None
    if not isinstance(text, str) or not text.isdigit() or len(text) > 3:
        return None
    count = int(text)
    return count if 1 <= count <= permits.MAX_PERMITS else None


def clear(layout: TableLayout, write_id: LockId, mark: str) -> dict[str, Any]:
    """A writer that saw every reader gone takes the mark and its count off, if no reader marked it since."""
    exprs = Expressions()
    name = exprs.name(READERS_MAY_HOLD)
    return {
        "TableName": layout.table_name,
        "Key": layout.key(write_id),
        "UpdateExpression": f"REMOVE {name}, {exprs.name(READERS_COUNT)}",
        "ConditionExpression": f"{name} = {exprs.string(mark)}",
        **exprs.params(),
    }


def set_on_release(exprs: Expressions, mark: str) -> str:
    """A release's SET clause that leaves the mark: a writer that never saw the set empty lets go of the item."""
    return f"{exprs.name(READERS_MAY_HOLD)} = {exprs.string(mark)}"
