"""The queue's writes: every request that joins a lock's queue of waiters, keeps a place in it, or leaves it.

Each is one conditional UpdateItem returning the item (``ALL_NEW``, and
``ALL_OLD`` when refused), so a waiter learns where it stands from the write
itself. What a stale entry is, and the write that prunes it, are
:mod:`.waiters`' and :mod:`.queue_pruning`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import item, queue_pruning, waiters
from .expressions import Expressions, update_expression

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

    from .layout import LockId, TableLayout


def join(
    layout: TableLayout,
    lock_id: LockId,
    waiter_id: str,
    entry: AttributeValueTypeDef,
    stale: Sequence[waiters.Stale],
    attribute: str = waiters.WAITERS,
) -> dict[str, Any]:
    """Add ``entry`` to the lock's queue (``attribute``: the admin's, or the line of code waiters) if it has
    room beside its live entries, taking out (one bite of) ``stale``, the entries found stale in it, each
    only if still stale.

    The room is counted as read: an entry stale then is stale now, as a refresh does not bring it
    back and time makes no entry live, so ``size < MAX_WAITERS + len(stale)`` counts the live
    entries, and a join of a stale entry's own id keeps the size as it is.
    """
    exprs = Expressions()
    queue, me = exprs.name(attribute), exprs.name(waiter_id)
    removes, still_stale = queue_pruning.pruned(exprs, queue_pruning.first_bite(stale), attribute)
    room = f"(size({queue}) < {exprs.number(waiters.MAX_WAITERS + len(stale))} OR attribute_exists({queue}.{me}))"
    condition = [_a_map(exprs, queue), room, f"attribute_exists({exprs.name(item.OWNER_NAME)})", *still_stale]
    return _request(
        layout,
        lock_id,
        exprs,
        update=update_expression([f"{queue}.{me} = {exprs.value(entry)}"], removes),
        condition=" AND ".join(condition),
    )


def start(
    layout: TableLayout,
    lock_id: LockId,
    waiter_id: str,
    entry: AttributeValueTypeDef,
    attribute: str = waiters.WAITERS,
) -> dict[str, Any]:
    """Start the queue of a held lock with ``entry``: the item has none (the AWS Java client's), or a
    ``waiters`` attribute that is not a map (a path into it would be a ValidationException for every ask)."""
    exprs = Expressions()
    queue = exprs.name(attribute)
    return _request(
        layout,
        lock_id,
        exprs,
        update=f"SET {queue} = {exprs.value({'M': {waiter_id: entry}})}",
        condition=f"(attribute_not_exists({queue}) OR NOT {_a_map(exprs, queue)}) AND {_held(exprs)}",
    )


def refresh(
    layout: TableLayout,
    lock_id: LockId,
    waiter_id: str,
    now_ms: int,
    attribute: str = waiters.WAITERS,
    window: float = waiters.LIVE_SECONDS,
) -> dict[str, Any]:
    """Mark the waiter seen at ``now_ms``, only while it is queued and live (seen within ``window`` seconds)."""
    window_ms = int(window * 1000)
    exprs = Expressions()
    seen = f"{exprs.name(attribute)}.{exprs.name(waiter_id)}.{exprs.name(waiters.SEEN)}"
    live = f"{seen} BETWEEN {exprs.number(now_ms - window_ms)} AND {exprs.number(now_ms + window_ms)}"
    return _request(layout, lock_id, exprs, update=f"SET {seen} = {exprs.number(now_ms)}", condition=live)


def leave(layout: TableLayout, lock_id: LockId, waiter_id: str, attribute: str = waiters.WAITERS) -> dict[str, Any]:
    """Take the waiter out of the queue, if it is there."""
    exprs = Expressions()
    path = f"{exprs.name(attribute)}.{exprs.name(waiter_id)}"
    return _request(layout, lock_id, exprs, update=f"REMOVE {path}", condition=f"attribute_exists({path})")


def grant_terms(exprs: Expressions, place: waiters.Place, me: str | None) -> tuple[str, list[str]]:
    """What a write taking a free lock (or one to take over) adds for the line: its condition, its REMOVE paths.

    An arrival (``me`` None, or not in the line) takes it only while the line is as read, none of it
    live: the same number of entries, the stale ones still stale. Nothing read (``place`` is
    :data:`.waiters.NO_LINE`): only while there is no line, or an empty one. A waiter in the line
    takes it while its own entry is there and those read stale still are (whoever joined since
    stands behind it); the grant takes it and them out. A line written as something other than a
    map is no line: no path into it can be written.
    """
    line = exprs.name(waiters.LINE)
    stale = queue_pruning.first_bite(place.stale)
    removes, still_stale = queue_pruning.pruned(exprs, stale, waiters.LINE)
    if me is not None and place.joined:
        mine = f"{line}.{exprs.name(me)}"
        return " AND ".join([f"attribute_exists({mine})", *still_stale]), [*removes, mine]
    as_read = " AND ".join([f"size({line}) = {exprs.number(place.size)}", *still_stale])
    if removes:  # the line must be there to take paths out of it
        return as_read, removes
    return f"(attribute_not_exists({line}) OR NOT {_a_map(exprs, line)} OR {as_read})", removes


def _a_map(exprs: Expressions, queue: str) -> str:
    return f"attribute_type({queue}, {exprs.string('M')})"


def _held(exprs: Expressions) -> str:
    """The item is a lock that is not marked released (held, or its holder stopped renewing)."""
    return f"attribute_exists({exprs.name(item.OWNER_NAME)}) AND attribute_not_exists({exprs.name(item.IS_RELEASED)})"


def _request(
    layout: TableLayout, lock_id: LockId, exprs: Expressions, *, update: str, condition: str
) -> dict[str, Any]:
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }
