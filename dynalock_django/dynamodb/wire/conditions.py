"""The conditions that make the protocol's writes safe, and the holdings they recognise.

A write is safe when its condition names exactly the holding it acts on: a
holder's own versions (:class:`KeptAlive`), a detached lease's owner and
token (:class:`Detached`), or the holding an operator read
(:func:`same_holding`). :mod:`.writes` builds each request around them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from . import item
from .expressions import Expressions
from .item import LockInfo


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
