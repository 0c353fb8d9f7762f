"""What a Celery beat's leaders sent: per entry, its last run, advanced only under the newest leader's fencing token.

One row per election (:class:`~dynalock_django.models.BeatSends`), keyed by its lock key: two beats
whose elections differ (another ``KEY_PREFIX``) never share a row, whose tokens, issued by two lock
items, could not be compared. A leader sends an entry only after
:func:`advance` moved that entry's last run from the value the leader read to the new one, in one
transaction that first stamps the row with its lease's fencing token (:func:`~.fencing.claim_row`):

- a leader paused past its lease whose successor has written the row since is refused
  (StaleFencingToken) and sends nothing;
- two leaders that read the same last run cannot both advance it: the second finds it moved and
  gets the row's last runs back instead, so each run is sent once.

Why a database row and not a DynamoDB item: the row outlives the lock item (released items may be
deleted, by ``DELETE_ON_RELEASE``, TTL clean-up or another client), the lock table holds only
locks (every reader of it would otherwise have to skip a foreign item), and the fence is the one
the package already ships for rows; a beat of a Django project has its database at hand.
"""

from __future__ import annotations

import hashlib

from django.db import connections, router, transaction

from .fencing import claim_row
from .models import BeatSends


def row_key(beat: str) -> str:
    """``beat``'s row: its key, or for a key too long for the column (255: MySQL's index limit), a prefix and hash.

    The key is ``KEY_PREFIX`` + "celery beat <app name>": an app name is rarely long, but nothing bounds it.
    """
    limit = BeatSends._meta.get_field("beat").max_length
    assert limit is not None
    if len(beat) <= limit:
        return beat
    digest = " sha256:" + hashlib.sha256(beat.encode("utf-8", "surrogatepass")).hexdigest()
    return beat[: limit - len(digest)] + digest


def last_runs(beat: str, *, formerly: str | None = None) -> dict[str, str]:
    """Each entry's last run as recorded for ``beat`` (entry name -> ISO 8601); empty before the first send.

    ``formerly``: the row's key before rows were keyed by the election's lock key (the name without
    ``KEY_PREFIX``), whose last runs a beat with no row of its own yet starts from: an upgrade sends on
    from its predecessors' sends, not from each host's own file.
    """
    own, former = row_key(beat), row_key(formerly or beat)
    rows = dict(BeatSends._base_manager.filter(beat__in={own, former}).values_list("beat", "last_runs"))
    return _readable(rows[own] if own in rows else rows.get(former))


def advance(
    beat: str, entry: str, *, read: str | None, new: str, token: int, formerly: str | None = None
) -> dict[str, str] | None:
    """Record ``entry``'s last run as ``new`` if it is still ``read`` (None: never recorded), under ``token``.

    None when recorded: the caller may send. Otherwise the last runs as stored now (another leader sent
    the entry since ``read``): the caller sends nothing. StaleFencingToken (nothing written) when a newer
    leader wrote the row. A new row starts from the last runs of ``formerly``'s (see :func:`last_runs`).
    """
    using = router.db_for_write(BeatSends)
    with transaction.atomic(using=using):
        row, _ = BeatSends._base_manager.using(using).get_or_create(
            beat=row_key(beat), defaults={"last_runs": lambda: {} if formerly is None else _stored(formerly)}
        )
        claim_row(row, token)  # row-locked from here to the commit: no other leader's advance interleaves
        row.refresh_from_db(using=using, fields=["last_runs"])
        runs = _readable(row.last_runs)
        if runs.get(entry) != read:
            return runs
        runs[entry] = new
        row.last_runs = runs
        row.save(using=using, update_fields=["last_runs"])
    return None


def drop_unusable_connection() -> None:
    """Close the beat's database connection if broken or past its age, as Django does before each request.

    A beat is one long loop with no requests, so nothing else ever does: a connection broken by a
    database restart would fail every later send. Never inside a transaction (not the beat's own).
    """
    connection = connections[router.db_for_write(BeatSends)]
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()


def drop_connection() -> None:
    """Close the beat's database connection after an error: the next query opens a fresh one.

    Some backends (SQLite) call every connection usable, so a broken one is closed here, not left to
    :func:`drop_unusable_connection`. Never inside a transaction (not the beat's own to end).
    """
    connection = connections[router.db_for_write(BeatSends)]
    if not connection.in_atomic_block:
        connection.close()


def _stored(beat: str) -> dict[str, str]:
    return _readable(BeatSends._base_manager.filter(beat=row_key(beat)).values_list("last_runs", flat=True).first())


def _readable(stored: object) -> dict[str, str]:
    """The text entries of what the row holds: anything else (edited by hand, another version's) is ignored."""
    if not isinstance(stored, dict):
        return {}
    return {name: value for name, value in stored.items() if isinstance(name, str) and isinstance(value, str)}
