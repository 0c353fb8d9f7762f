"""Locks described for people: rows of the live-locks page and of ``manage.py dynalock list``.

Times come from the holders' wall clocks (display only): "time left" is an
estimate, and a lock whose holder stopped renewing long ago is "dead" (shown
only on request), although only the protocol may decide it is free.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db import models
from django.urls import NoReverseMatch, reverse
from django.utils.text import capfirst
from django.utils.translation import gettext as _

from .client import wall_now
from .conf import dynalock_settings
from .dynamodb import MAX_PERMITS, MAX_READERS, InvalidLockRequest, LockClient, LockInfo, PermitHolder, ScanPage
from .key_scope import in_current_scope, key_head
from .keys import ParsedKey, model_label, parse_key
from .payload import LockData

# A lock not renewed for its lease plus this long (by the holder's clock) is shown as dead.
DEAD_AFTER = timedelta(minutes=1)

# Which models' objects a reader may see (their str() and admin links); None: all of them (the command line).
ModelFilter = Callable[[type[models.Model]], bool]


@dataclass(frozen=True)
class LockRow:
    lock: LockInfo
    parsed: ParsedKey
    data: LockData | None
    state: str  # held, dead, released, malformed
    object_label: str | None = None
    object_url: str | None = None

    @property
    def holder(self) -> str:
        return holder_label(self.lock, shows_hosts=True)

    @property
    def model_name(self) -> str:
        """The model's verbose name; a model not installed here by its label; "-" for a named lock."""
        if self.parsed.model is not None:
            return str(self.parsed.model._meta.verbose_name)
        return self.parsed.label or "-"

    @property
    def display_name(self) -> str:
        """What the lock is on, for people: its object, else the lock's name, or the row it locks."""
        parsed = self.parsed
        if self.object_label is not None:
            return self.object_label
        if parsed.name is not None:
            return parsed.name
        if parsed.pk is not None:
            return capfirst(f"{self.model_name} {','.join(parsed.pk)}")
        return self.lock.key

    @property
    def time_left(self) -> float | None:
        """Seconds left by the holder's last renewal and our clock; None when it cannot be told."""
        if self.state != "held" or self.lock.renewed_at is None:
            return None
        ends = _later(self.lock.renewed_at, self.lock.lease_duration)
        return None if ends is None else max(0.0, (ends - wall_now()).total_seconds())


def holder_label(lock: LockInfo, *, shows_hosts: bool) -> str:
    """Who holds ``lock``, for people: its user; for code, its host and process only when ``shows_hosts``.

    Host names and pids map the servers: only those who may see the live-locks
    page (:data:`.models.VIEW_LOCK_PERMISSION`) are shown them; others read
    "a background job".
    """
    data = LockData.from_bytes(lock.data)
    if data is not None and data.username:
        return data.username
    if not shows_hosts:
        return _("a background job")
    if data is not None:
        return data.holder
    return lock.owner_name or "?"


@dataclass
class LockRowPage:
    """One Scan request's rows, how many of each state are shown, and how many it read but does not show."""

    rows: list[LockRow]
    next_cursor: str | None
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    # Read from the live-locks index (held locks only); False: a scan of the whole table.
    from_index: bool = False
    hidden: int = 0  # dead or released without show_all, another holder's with a holder filter


def load_page(
    client: LockClient,
    *,
    cursor: str | None,
    page_size: int,
    model: type[models.Model] | None = None,
    search: str = "",
    holder: str = "",
    show_all: bool = False,
    other_clients: bool = False,
    admin_site: admin.AdminSite | None = None,
    may_view: ModelFilter | None = None,
) -> LockRowPage:
    """One Scan request: ``model`` and ``search`` (a key prefix) filter in DynamoDB, ``holder`` here.

    Held locks come from the live-locks index; ``show_all`` and ``other_clients`` scan the
    table (:func:`read_page`).
    Only this project's keys (``KEY_PREFIX``) of the current ``KEY_SCOPE`` are read, unless
    ``ADMIN_SHOWS_ALL_KEYS``: another tenant's locks are neither listed nor counted.
    """
    show_all_keys = dynalock_settings.ADMIN_SHOWS_ALL_KEYS
    head = key_head()
    prefix = head + search if search else ("" if show_all_keys else head)
    if model is not None:
        model_prefix = f"{head}{model_label(model)}:"
        prefix = prefix if prefix and prefix.startswith(model_prefix) else model_prefix
    page = read_page(
        client,
        cursor=cursor,
        page_size=page_size,
        key_prefix=prefix or None,
        include_released=show_all,
        other_clients=other_clients,
    )
    # The public schema's prefix is every tenant's too: their scoped keys are left out here.
    rows = [describe(lock) for lock in page.locks if show_all_keys or in_current_scope(lock.key)]
    visible = [row for row in rows if show_all or row.state in ("held", "malformed")]
    if holder:
        visible = [row for row in visible if row.holder == holder]
    # The footer counts the rows above it: "1 held, 1 whose holder is gone" stood above one row.
    counts = collections.Counter(row.state for row in visible)
    shown = with_objects(visible, admin_site, may_view)
    return LockRowPage(shown, page.cursor, counts, page.from_index, hidden=len(rows) - len(visible))


def read_page(
    client: LockClient,
    *,
    cursor: str | None,
    page_size: int,
    key_prefix: str | None,
    include_released: bool,
    other_clients: bool,
) -> ScanPage:
    """One request: held locks from the live-locks index, or a scan of the whole table.

    Released locks are not in the index, nor are locks of clients that keep no
    live mark (the AWS Java client): asking for either scans the table.
    """
    if include_released or other_clients:
        return client.scan_page(
            limit=page_size, cursor=cursor, include_released=include_released, key_prefix=key_prefix
        )
    return client.live_page(limit=page_size, cursor=cursor, key_prefix=key_prefix)


@dataclass(frozen=True)
class CountedItems:
    """The counted locks named by one key: a semaphore's permits in use, a row's (or a name's) readers."""

    permits: list[PermitHolder]
    readers: list[PermitHolder]

    def occupancy(self) -> str:
        """ "3 of 5 in use"; without "of N" when the items do not agree on N (an item may say anything)."""
        counts = {holder.lock.permits for holder in self.permits}
        in_use = sum(1 for holder in self.permits if describe(holder.lock).state == "held")
        count = next(iter(counts)) if len(counts) == 1 else None
        return f"{in_use} of {count} in use" if isinstance(count, int) else f"{in_use} in use"


def read_counted(client: LockClient, key: str) -> CountedItems:
    """The permits and readers in use under ``key``, whatever their count: two BatchGetItems.

    Every permit a semaphore may have (``MAX_PERMITS``) and every reader a
    readers-writer lock may have (``MAX_READERS``) are read, as the count is
    known only from the items. A key that cannot name a set (a permit's own
    key) has none.
    """
    try:
        permits = client.semaphore(key, MAX_PERMITS).holders()
        readers = client.readers_writer(key, max_readers=MAX_READERS).readers()
    except InvalidLockRequest:
        return CountedItems([], [])
    return CountedItems(permits, readers)


def describe_rows(locks: list[LockInfo], admin_site: admin.AdminSite | None = None) -> list[LockRow]:
    """Rows for ``locks``, with their objects looked up (one query per model)."""
    return with_objects([describe(lock) for lock in locks], admin_site)


def describe(lock: LockInfo) -> LockRow:
    data = LockData.from_bytes(lock.data)
    parsed = parse_key(lock.key)
    return LockRow(lock, parsed, data, _state(lock))


def _state(lock: LockInfo) -> str:
    if lock.is_malformed:
        return "malformed"
    if lock.is_released:
        return "released"
    renewed = lock.renewed_at or lock.acquired_at
    if renewed is None:
        return "held"
    dead_after = _later(renewed, lock.lease_duration, DEAD_AFTER.total_seconds())
    return "dead" if dead_after is not None and dead_after < wall_now() else "held"


def _later(moment: datetime, *seconds: float) -> datetime | None:
    """``moment`` plus ``seconds``; None past the last date there is (an item's lease of 30 million years:
    the timedelta itself overflows, so it is made here, under the guard)."""
    try:
        for duration in seconds:
            moment += timedelta(seconds=duration)
    except OverflowError:
        return None
    return moment


def with_objects(
    rows: list[LockRow], admin_site: admin.AdminSite | None, may_view: ModelFilter | None = None
) -> list[LockRow]:
    """The locked objects' str() and admin links: one query per model on the page.

    Objects of models that ``may_view`` refuses stay unnamed (the key alone).
    """
    wanted: dict[type[models.Model], set[Any]] = collections.defaultdict(set)
    for row in rows:
        model = row.parsed.model
        if model is not None and row.parsed.object_pk is not None and (may_view is None or may_view(model)):
            wanted[model].add(row.parsed.object_pk)
    found: dict[tuple[type[models.Model], str], models.Model] = {}
    for model, pks in wanted.items():
        found.update({(model, _pk_text(pk)): obj for pk, obj in model._base_manager.in_bulk(list(pks)).items()})
    described = []
    for row in rows:
        row_model, pk = row.parsed.model, row.parsed.object_pk
        obj = found.get((row_model, _pk_text(pk))) if row_model is not None and pk is not None else None
        if obj is None:
            described.append(row)
            continue
        described.append(
            LockRow(
                row.lock,
                row.parsed,
                row.data,
                row.state,
                str(obj),
                admin_change_url(type(obj), obj.pk, admin_site),
            )
        )
    return described


def _pk_text(pk: Any) -> str:
    return ",".join(str(part) for part in pk) if isinstance(pk, tuple) else str(pk)


def admin_change_url(model: type[models.Model], pk: Any, admin_site: admin.AdminSite | None) -> str | None:
    """The change page of ``model``'s ``pk`` in ``admin_site`` (the default site), or None without one."""
    site = admin_site or admin.site
    if not site.is_registered(model):
        return None
    opts = model._meta
    try:
        return reverse(f"{site.name}:{opts.app_label}_{opts.model_name}_change", args=[quote(pk)])
    except NoReverseMatch:
        return None
