"""Every write the protocol sends, as pure functions returning boto3 parameters.

This is the wire format of the writes: what each one sets, and the
condition that makes it safe. The client decides when to send them and what
their outcomes mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import conditions, item, waiters
from . import readers_mark as marks
from .conditions import Detached, Holding, KeptAlive
from .expressions import Expressions, Shape, update_expression
from .item import LockInfo
from .item import Stamp as Stamp
from .item import new_version as new_version
from .item import sent_at as sent_at
from .layout import LockId, TableLayout


def acquire(
    layout: TableLayout,
    lock_id: LockId,
    stamp: Stamp,
    *,
    data: bytes | None,
    observed: LockInfo | None,
    may_take_over: bool,
    pending: list[str],
    permits: int | None = None,
    line: waiters.Place = waiters.NO_LINE,
    me: str | None = None,
    as_read: tuple[LockInfo | None] | None = None,
    shaped: bool = True,
) -> dict[str, Any]:
    """Take the lock if it is free or released, and issue the next fencing token.

    ``observed``: the holder's item as we last saw it; with
    ``may_take_over`` (its version has stood for its whole lease on our
    clock) the write may replace exactly that version. An observed item
    whose token is not a number gets its token overwritten, but only that
    very item, once released or taken over. ``pending``: versions this owner
    may have written already (answers lost); finding one means the lock is ours.
    ``permits``: the item is a permit of a set of that many (permits.py), stamped with the count.
    ``as_read``: a permit's item as its round read it (``(None,)``: no item), taken free only as it
    was (its version, or no item; counted/name_lock.py).
    The condition leaves the count it replaces alone: the write takes only a released item or the
    very version seen silent for a lease, and a permit of another count that is no longer held is
    a new count's to take (a count is checked against holdings, by the round that reads the set).
    ``line``: the line of waiters as read, and ``me``, this process's entry in it: a released or
    expired lock goes to the line's first live waiter, not past it (:func:`.queue_writes.grant_terms`).
    ``shaped`` False: built anew, not from the uncontended acquire's shape (which is built so).
    """
    usual = observed is None and not pending and line is waiters.NO_LINE and me is None and as_read is None
    if shaped and usual and permits is None:
        return _filled("acquire", layout, lock_id, stamp, data, "")  # the uncontended acquire's: one shape
    exprs = Expressions()
    bad_token = observed is not None and observed.bad_fencing_token
    unline: list[str] = []
    if usual:  # nothing read: no version to match, no line to take paths out of
        condition = conditions.free_of_any_line(exprs, layout)
    else:
        taken_as_read = as_read if permits is not None else None  # only a permit is taken as read
        condition, unline = conditions.free_as_read(
            exprs, layout, line, me, observed, may_take_over, pending, taken_as_read, stamp
        )
    counted: list[str] = []
    if permits is not None:
        count, value = exprs.name(item.PERMITS), exprs.number(permits)
        counted.append(f"{count} = {value}")
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "UpdateExpression": _grant_update(
            exprs, layout, lock_id, stamp, data=data, overwrite_token=bad_token, counted=counted, unline=unline
        ),
        "ConditionExpression": condition,
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }


def take_over(
    layout: TableLayout,
    lock: LockInfo,
    stamp: Stamp,
    *,
    data: bytes | None,
    dequeue: Sequence[str] = (),
    unchanged: bool = False,
) -> dict[str, Any]:
    """Grant the lock to ``stamp``'s writer if ``lock`` is still the holding it was read in (as ``force_release``).

    ``dequeue``: waiters (of ``lock.waiters``, so the queue exists) this grant takes out of the queue.
    ``unchanged``: only if the item is exactly as read (its record version), so a holder that
    renewed since, however late, keeps the lock.
    """
    exprs = Expressions()
    lock_id = (lock.key, lock.sort_key)
    condition = conditions.same_holding(exprs, lock)
    if unchanged:
        condition = f"{conditions.version_is(exprs, lock.raw_version)} AND {condition}"
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "UpdateExpression": _grant_update(
            exprs, layout, lock_id, stamp, data=data, overwrite_token=lock.bad_fencing_token, dequeue=dequeue
        ),
        "ConditionExpression": condition,
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }


def renew(layout: TableLayout, lock_id: LockId, stamp: Stamp, *, holding: Holding) -> dict[str, Any]:
    """A heartbeat: a new version and lease, only if the lock is still ``holding`` and not released.

    It sets the live-locks index's key again: a lock acquired before the
    index existed (by an older version of this package) appears there at its next renewal.
    A detached lease's renewal returns the item (``ALL_NEW``: the holder's
    own data and the queue), so the holder learns who waits at no extra
    request; a heartbeat returns nothing, so that a large ``data`` does not
    travel back every period. An item without a queue gets an empty one, so
    the next ask is one write.
    """
    exprs = Expressions()
    condition = conditions.still_held(exprs, holding, renewal=True)
    sets = [*_stamp_sets(exprs, layout, stamp, acquired=False), _live(exprs, lock_id), _queue_kept(exprs)]
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "UpdateExpression": update_expression(sets, []),
        "ConditionExpression": condition,
        "ReturnValues": "ALL_NEW" if isinstance(holding, Detached) else "NONE",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }


def release(
    layout: TableLayout,
    lock_id: LockId,
    stamp: Stamp,
    *,
    holding: Holding,
    readers_mark: str | None = None,
    shaped: bool = True,
) -> dict[str, Any]:
    """Mark our lock released, keeping the item (and so its fencing token), and take it out of the live-locks index.

    ``readers_mark``: a readers-writer lock's writer that never saw its readers gone leaves
    the mark that readers may hold, in the same write (:mod:`.readers_mark`). ``shaped``: as :func:`acquire`'s.
    """
    usual = isinstance(holding, KeptAlive) and len(holding.versions) == 1 and holding.owner_name == stamp.owner_name
    if shaped and usual and readers_mark is None:  # the usual release: one shape
        assert isinstance(holding, KeptAlive)
        return _filled("release", layout, lock_id, stamp, None, holding.versions[0])
    exprs = Expressions()
    sets = [*_stamp_sets(exprs, layout, stamp, acquired=False), conditions.released(exprs)]
    if readers_mark is not None:
        sets.append(marks.set_on_release(exprs, readers_mark))
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "UpdateExpression": update_expression(sets, [exprs.name(item.LIVE_LOCK_KEY)]),
        "ConditionExpression": conditions.still_held(exprs, holding),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }


def delete(layout: TableLayout, lock_id: LockId, *, holding: Holding) -> dict[str, Any]:
    """Delete our lock's item (``delete_on_release``); the next token is then seeded anew."""
    exprs = Expressions()
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "ConditionExpression": conditions.still_held(exprs, holding),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }


def force_release(
    layout: TableLayout, lock: LockInfo, *, version: str, released_by: str, wall_time: float
) -> dict[str, Any]:
    """An operator releases someone else's lock, as long as it is still the holding they read."""
    exprs = Expressions()
    sets = [
        conditions.released(exprs),
        f"{exprs.name(item.RECORD_VERSION_NUMBER)} = {exprs.string(version)}",
        f"{exprs.name(item.RELEASED_BY)} = {exprs.string(released_by)}",
    ]
    if layout.ttl_attribute:
        sets.append(f"{exprs.name(layout.ttl_attribute)} = {exprs.number(layout.ttl_seconds(wall_time, 0))}")
    return {
        "TableName": layout.table_name,
        "Key": layout.key((lock.key, lock.sort_key)),
        "UpdateExpression": update_expression(sets, [exprs.name(item.LIVE_LOCK_KEY)]),
        "ConditionExpression": conditions.same_holding(exprs, lock),
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }


# DynamoDB's limit on the items of one TransactWriteItems.
MAX_TRANSACTION_ITEMS = 100


def in_transaction(request: dict[str, Any]) -> dict[str, Any]:
    """An UpdateItem's (or, without an UpdateExpression, DeleteItem's) parameters as one TransactWriteItems entry.

    The same key, update and condition; a transaction returns no attributes,
    but still the item that refused it.
    """
    kind = "Update" if "UpdateExpression" in request else "Delete"
    return {kind: {name: value for name, value in request.items() if name != "ReturnValues"}}


def _grant_update(
    exprs: Expressions,
    layout: TableLayout,
    lock_id: LockId,
    stamp: Stamp,
    *,
    data: bytes | None,
    overwrite_token: bool,
    dequeue: Sequence[str] = (),
    counted: Sequence[str] = (),
    unline: Sequence[str] = (),
) -> str:
    """Everything a grant writes: the stamp, the next fencing token, ``data``, the live mark and no release mark.

    ``overwrite_token``: the item's token is not a number, so it cannot be
    incremented; the grant replaces it (only ever conditioned on that very item).
    The queue stays (started empty if there was none, so an ask finds it),
    less the ``dequeue`` waiters. ``counted``: a permit's count, set on every grant of a permit.
    ``unline``: paths into the line of code waiters this grant takes out (the taker, stale entries).
    """
    token = exprs.name(item.FENCING_TOKEN)
    if overwrite_token:
        token_update = f"{token} = {exprs.number(stamp.wall_ms)}"
    else:
        # Seeding with the wall clock keeps tokens above any issued before the
        # item was deleted (by TTL or delete_on_release) and recreated.
        token_update = f"{token} = if_not_exists({token}, {exprs.number(stamp.wall_ms)}) + {exprs.number(1)}"
    sets = [*_stamp_sets(exprs, layout, stamp, acquired=True), token_update, _live(exprs, lock_id), *counted]
    removes = [exprs.name(item.IS_RELEASED), exprs.name(item.RELEASED_BY), *unline]
    if dequeue:
        removes.extend(f"{exprs.name(waiters.WAITERS)}.{exprs.name(waiter_id)}" for waiter_id in dequeue)
    else:
        sets.append(_queue_kept(exprs))
    if data is not None:
        sets.append(f"{exprs.name(item.DATA)} = {exprs.value({'B': data})}")
    else:
        removes.append(exprs.name(item.DATA))
    return update_expression(sets, removes)


def _stamp_sets(exprs: Expressions, layout: TableLayout, stamp: Stamp, *, acquired: bool) -> list[str]:
    now = exprs.number(stamp.wall_ms)
    sets = [
        f"{exprs.name(item.RECORD_VERSION_NUMBER)} = {exprs.string(stamp.version)}",
        f"{exprs.name(item.LEASE_DURATION)} = {exprs.string(str(round(stamp.lease_duration * 1000)))}",
        f"{exprs.name(item.RENEWED_AT)} = {now}",
        f"{exprs.name(item.SENT_AT)} = {exprs.value(sent_at(stamp.version, stamp.wall_ms))}",
    ]
    if acquired:
        sets.append(f"{exprs.name(item.OWNER_NAME)} = {exprs.string(stamp.owner_name)}")
        sets.append(f"{exprs.name(item.ACQUIRED_AT)} = {now}")
    if layout.ttl_attribute:
        ttl = layout.ttl_seconds(stamp.wall_time, stamp.lease_duration)
        sets.append(f"{exprs.name(layout.ttl_attribute)} = {exprs.number(ttl)}")
    return sets


def _filled(
    kind: str, layout: TableLayout, lock_id: LockId, stamp: Stamp, data: bytes | None, held: str
) -> dict[str, Any]:
    """The request :func:`acquire` (``kind`` "acquire") or :func:`release` builds for these, from its shape."""
    # Keyed by the layout's fields, not the layout: a frozen dataclass hashes and compares in Python, twice a lock.
    # One tuple, written out (a starred one is built as a list first).
    with_data = data is not None
    kind_key = (
        kind,
        layout.table_name,
        layout.partition_key_name,
        layout.sort_key_name,
        layout.ttl_attribute,
        with_data,
    )
    shape = Shape.of(kind_key, _probe, kind, layout, with_data)
    return shape.fill(layout.key(lock_id), _slots(layout, lock_id, stamp, data, held))


def _probe(kind: str, layout: TableLayout, with_data: bool, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Probe ``n`` of :func:`_filled`'s shape: the request its builder builds for values unlike any other's."""
    stamp_n = Stamp(f"owner-{n}", f"version-{n}", n + 1.5, 0.0, n + 1000.0)
    id_n: LockId = (f"key-{n}", None if layout.sort_key_name is None else f"sort-{n}")
    data_n = b"data-%d" % n if with_data else None
    holding = KeptAlive(stamp_n.owner_name, (f"held-{n}",))
    return (
        acquire(layout, id_n, stamp_n, data=data_n, observed=None, may_take_over=False, pending=[], shaped=False)
        if kind == "acquire"
        else release(layout, id_n, stamp_n, holding=holding, shaped=False)
    ), _slots(layout, id_n, stamp_n, data_n, f"held-{n}")


def _slots(layout: TableLayout, lock_id: LockId, stamp: Stamp, data: bytes | None, held: str) -> dict[str, Any]:
    """The values that differ from call to call in those two requests, by slot (see :class:`.Shape`)."""
    version, lease_duration, wall_time = stamp.version, stamp.lease_duration, stamp.wall_time
    wall_ms = int(wall_time * 1000)  # as stamp.wall_ms, one call fewer
    return {
        "version": {"S": version},
        "duration": {"S": str(round(lease_duration * 1000))},
        "wall_ms": {"N": str(wall_ms)},
        "sent_at": sent_at(version, wall_ms),
        "owner": {"S": stamp.owner_name},
        "ttl": {"N": str(layout.ttl_seconds(wall_time, lease_duration))},
        "key": {"S": lock_id[0]},
        "data": {"B": data},
        "held": {"S": held},
    }


def _queue_kept(exprs: Expressions) -> str:
    """``waiters = if_not_exists(waiters, {})``: the queue as it is, or an empty one to add to."""
    queue = exprs.name(waiters.WAITERS)
    return f"{queue} = if_not_exists({queue}, {exprs.value({'M': {}})})"


def _live(exprs: Expressions, lock_id: LockId) -> str:
    """``liveLockKey = key``: the item is in the sparse live-locks index until a release removes it."""
    return f"{exprs.name(item.LIVE_LOCK_KEY)} = {exprs.string(lock_id[0])}"


def reader_in(
    layout: TableLayout, write_id: LockId, *, gate: LockInfo | None, expired: bool, stamp: Stamp, count: int
) -> dict[str, Any]:
    """A reader that won a permit marks the write item, if no writer holds it (else it gives the permit back).

    ``gate``: the write item as the reader's round read it, judged free (None, released, or
    ``expired``: its version stood for its lease). The mark is ``stamp.version``, stored with the
    reader set's ``count`` (a writer given fewer readers reads that many). Where the
    round found no item, the mark comes with a released lock item in the Java client's format
    (as if ``stamp``'s owner had held and released it; no token, so the next grant seeds one),
    created only if there still is none: an UpdateItem of the mark alone would create an item
    no client reads as a lock.
    """
    exprs = Expressions()
    mark = f"{exprs.name(marks.READERS_MAY_HOLD)} = {exprs.string(stamp.version)}"
    marked_count = f"{exprs.name(marks.READERS_COUNT)} = {exprs.number(count)}"
    key = exprs.name(layout.partition_key_name)
    if gate is None:
        sets = [
            mark,
            marked_count,
            f"{exprs.name(item.OWNER_NAME)} = {exprs.string(stamp.owner_name)}",
            f"{exprs.name(item.RECORD_VERSION_NUMBER)} = {exprs.string(marks.new_mark())}",
            f"{exprs.name(item.LEASE_DURATION)} = {exprs.string(str(round(stamp.lease_duration * 1000)))}",
            conditions.released(exprs),
        ]
        if layout.ttl_attribute:
            sets.append(f"{exprs.name(layout.ttl_attribute)} = {exprs.number(layout.ttl_seconds(stamp.wall_time, 0))}")
        condition = f"attribute_not_exists({key})"
    else:
        sets = [mark, marked_count]
        free = [conditions.released(exprs)]
        if expired:
            free.append(conditions.version_is(exprs, gate.raw_version))
        condition = f"attribute_exists({key}) AND ({' OR '.join(free)})"
    return {
        "TableName": layout.table_name,
        "Key": layout.key(write_id),
        "UpdateExpression": update_expression(sets, []),
        "ConditionExpression": condition,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        **exprs.params(),
    }
