"""Taking stale entries out of a lock's queue: the REMOVE actions and the conditions that keep it safe.

DynamoDB cannot count a queue's live entries in a condition expression, so
the writer that read the queue names the entries it found stale
(:func:`.waiters.stale_entries`) and removes them, each conditioned on what
showed it to be stale still holding (:func:`still_stale`): a waiter who asked
again, or whose page polled, in between stays in line, and the write is refused.
Only scalar comparisons are used: dynalite cannot compare whole maps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .expressions import Expressions
from .layout import LockId, TableLayout
from .waiters import WAITERS, Stale

# Entries one write removes at most, and the bytes of their ids: a hostile queue of thousands of
# entries is taken out a bite at a time, each write well inside DynamoDB's 4 KB expressions and
# 300 operators (and its 2 MB of names and values).
MAX_PRUNED_PER_WRITE = 30
MAX_PRUNED_ID_BYTES = 256 * 1024


def first_bite(stale: Sequence[Stale]) -> list[Stale]:
    """As many of ``stale`` as one write takes out (see :data:`MAX_PRUNED_PER_WRITE`)."""
    bite: list[Stale] = []
    budget = MAX_PRUNED_ID_BYTES
    for entry in stale:
        size = len(entry.waiter_id.encode("utf-8", "surrogatepass"))
        if len(bite) == MAX_PRUNED_PER_WRITE or size > budget:
            break
        bite.append(entry)
        budget -= size
    return bite


def pruned(exprs: Expressions, stale: Sequence[Stale], attribute: str = WAITERS) -> tuple[list[str], list[str]]:
    """The REMOVE paths and the condition terms (all must hold) of a write taking out ``stale`` (of ``attribute``)."""
    queue = exprs.name(attribute)
    removes: list[str] = []
    terms: list[str] = []
    for entry in stale:
        path = f"{queue}.{exprs.name(entry.waiter_id)}"
        removes.append(path)
        terms.append(still_stale(exprs, path, entry))
    return removes, terms


def still_stale(exprs: Expressions, path: str, entry: Stale) -> str:
    """The entry at ``path`` is still as stale as read: a join (which writes a whole new entry) or a
    refresh (a new ``seen``) of its waiter id makes this false."""
    field = path if entry.field is None else f"{path}.{exprs.name(entry.field)}"
    if entry.as_read is not None:
        return f"{field} = {exprs.value(entry.as_read)}"
    if entry.expected_type is not None:
        return f"(attribute_exists({path}) AND NOT attribute_type({field}, {exprs.string(entry.expected_type)}))"
    return f"attribute_exists({path})"  # an id no ask writes: stale for good


def prune(layout: TableLayout, lock_id: LockId, stale: Sequence[Stale]) -> dict[str, Any]:
    """One UpdateItem taking ``stale`` (one bite of it) out of the queue, and changing nothing else."""
    exprs = Expressions()
    removes, terms = pruned(exprs, first_bite(stale))
    return {
        "TableName": layout.table_name,
        "Key": layout.key(lock_id),
        "UpdateExpression": "REMOVE " + ", ".join(removes),
        "ConditionExpression": " AND ".join(terms),
        **exprs.params(),
    }
