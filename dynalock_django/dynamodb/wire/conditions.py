"""The conditions that make the protocol's writes safe, and the holdings they recognise.

A write is safe when its condition names exactly the holding it acts on: a
holder's own versions (:class:`KeptAlive`), a detached lease's owner and
token (:class:`Detached`), or the holding an operator read
(:func:`same_holding`); an acquire takes only a lock free as it read it
(:func:`free_of_any_line`, :func:`free_as_read`). :mod:`.writes` builds each
request around them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from . import item, queue_writes, waiters
from .expressions import Expressions
from .item import LockInfo, Stamp

if TYPE_CHECKING:
    from .layout import TableLayout


class KeptAlive(NamedTuple):
    """A holding whose every version since its grant this process wrote (see :func:`still_held`).

    A named tuple: each release makes one, and a frozen dataclass's fields cost four times as much to set.
    """

    owner_name: str
    versions: tuple[str, ...]  # the last confirmed one, then any whose answer was lost


@dataclass(frozen=True)
class Detached:
    """A holding its owner renews from elsewhere (``keep_alive=False``; see :func:`still_held`)."""

    owner_name: str
    fencing_token: int


Holding = KeptAlive | Detached


def released(exprs: Expressions) -> str:
    """``isReleased = "1"``: as a condition, the lock is released; in SET, release it."""
    return f"{exprs.name(item.IS_RELEASED)} = {exprs.string(item.IS_RELEASED_VALUE)}"


def owned_version(exprs: Expressions, owner_name: str, versions: list[str]) -> str:
    owner = f"{exprs.name(item.OWNER_NAME)} = {exprs.string(owner_name)}"
    return f"{exprs.one_of(item.RECORD_VERSION_NUMBER, versions)} AND {owner}"


def still_held(exprs: Expressions, holding: Holding, *, renewal: bool = False) -> str:
    """The item still is ``holding``: the condition of every renewal and release of a lease.

    A lease its own client keeps alive (``KeptAlive``) is recognised as the
    AWS Java client recognises its locks: by its owner and a record version
    this process wrote. Every write stamps a new version, a release too, so a
    match also means nobody released it since; a renewal checks the release
    mark all the same, as it always has.

    A detached lease (``keep_alive=False``, ``Detached``) is renewed by its
    owner from elsewhere, such as a browser tab through whichever server
    answers, so its version changes between this process's writes and cannot
    recognise it. Its owner and fencing token can: they change only when the
    lock changes hands. A release keeps both, so the release mark is always
    checked, and a retried renewal passes again: it is idempotent.
    """
    if isinstance(holding, Detached):
        return f"{owner_and_token(exprs, holding.owner_name, holding.fencing_token)} AND {not_released(exprs)}"
    condition = owned_version(exprs, holding.owner_name, list(holding.versions))
    return f"{condition} AND {not_released(exprs)}" if renewal else condition


def owner_and_token(exprs: Expressions, owner_name: str, fencing_token: int) -> str:
    """One holding, whatever its renewals: owner and fencing token change only when the lock changes hands."""
    owner = f"{exprs.name(item.OWNER_NAME)} = {exprs.string(owner_name)}"
    return f"{owner} AND {exprs.name(item.FENCING_TOKEN)} = {exprs.number(fencing_token)}"


def not_released(exprs: Expressions) -> str:
    return f"attribute_not_exists({exprs.name(item.IS_RELEASED)})"


def same_holding(exprs: Expressions, lock: LockInfo) -> str:
    """The holding ``lock`` was read in, still unreleased.

    Heartbeats change the record version every few seconds, so an operator's
    read would go stale at once; owner and fencing token change only when the
    lock changes hands. Items without a usable token (the Java client's,
    malformed ones) fall back to the exact version.
    """
    conditions = []
    if lock.fencing_token is not None and not lock.bad_fencing_token and lock.owner_name is not None:
        conditions.append(owner_and_token(exprs, lock.owner_name, lock.fencing_token))
    else:
        conditions.append(version_is(exprs, lock.raw_version))
    if not lock.is_released:
        conditions.append(not_released(exprs))
    return " AND ".join(conditions)


def version_is(exprs: Expressions, raw_version: Any) -> str:
    """The item still carries exactly this stored version (or still has none), whatever its type."""
    name = exprs.name(item.RECORD_VERSION_NUMBER)
    if raw_version is None:
        return f"attribute_not_exists({name})"
    return f"{name} = {exprs.value(raw_version)}"


def free_of_any_line(exprs: Expressions, layout: TableLayout) -> str:
    """The condition of an acquire that read nothing: no item, or a released one with no waiter in line,
    its fencing token absent or a number.

    It is the general condition for that case, ``(no item OR released AND (no line OR not a map OR an
    empty one)) AND (no token OR a number token)``, written as a disjunction of conjunctions without
    parentheses: no item implies no token, and "no line" is "not a map" (``attribute_type`` is false
    for a missing attribute). The same truth table, and dynalite's expression parser (PEG.js, no
    memoizing) backtracks over every nested parenthesis: the parenthesized form took it about 7 times
    as long to parse as this one, the larger part of an uncontended acquire's time there.
    """
    line, token = exprs.name(waiters.LINE), exprs.name(item.FENCING_TOKEN)
    a_map = f"attribute_type({line}, {exprs.string('M')})"
    # size() only of a map: moto raises on size() of a missing attribute, where DynamoDB finds it false.
    not_a_map, empty = f"NOT {a_map}", f"{a_map} AND size({line}) = {exprs.number(0)}"
    no_token, number_token = f"attribute_not_exists({token})", f"attribute_type({token}, {exprs.string('N')})"
    is_released = released(exprs)
    free = [
        f"{is_released} AND {line_free} AND {token_ok}"
        for line_free in (not_a_map, empty)
        for token_ok in (no_token, number_token)
    ]
    return " OR ".join([f"attribute_not_exists({exprs.name(layout.partition_key_name)})", *free])


def free_as_read(
    exprs: Expressions,
    layout: TableLayout,
    line: waiters.Place,
    me: str | None,
    observed: LockInfo | None,
    may_take_over: bool,
    pending: list[str],
    as_read: tuple[LockInfo | None] | None,
    stamp: Stamp,
) -> tuple[str, list[str]]:
    """The condition of an acquire after a read (see :func:`.writes.acquire`), and the paths of the line its
    grant takes out."""
    gate, unline = queue_writes.grant_terms(exprs, line, me)
    if observed is not None and observed.bad_fencing_token:
        same_item = f"{version_is(exprs, observed.raw_version)} AND {gate}"
        return (same_item if may_take_over else f"{same_item} AND {released(exprs)}"), unline
    if as_read is not None:
        # A permit is taken as read: a name's holder that shut it since refuses the write (name_lock.py).
        found = as_read[0]
        free = [
            f"attribute_not_exists({exprs.name(layout.partition_key_name)}) AND {gate}"
            if found is None
            else f"{version_is(exprs, found.raw_version)} AND {released(exprs)} AND {gate}"
        ]
    else:
        free = [f"{released(exprs)} AND {gate}"]
    if not unline:  # a new item has no line to take paths out of
        free.insert(0, f"attribute_not_exists({exprs.name(layout.partition_key_name)})")
    if observed is not None and may_take_over:
        free.append(f"{version_is(exprs, observed.raw_version)} AND {gate}")
    if pending:
        free.append(f"({owned_version(exprs, stamp.owner_name, pending)})")
    token, number = exprs.name(item.FENCING_TOKEN), exprs.string("N")
    return f"({' OR '.join(free)}) AND (attribute_not_exists({token}) OR attribute_type({token}, {number}))", unline
