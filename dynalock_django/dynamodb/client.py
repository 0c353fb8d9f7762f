"""LockClient: the AWS DynamoDB Lock Client protocol over boto3's low-level client.

Request budget (each a single DynamoDB call; botocore may retry it inside):

* uncontended acquire: one conditional UpdateItem that also issues the
  fencing token; release: one conditional UpdateItem (or DeleteItem);
* failed ``try_acquire``: that one write, whose error carries the holder's
  item (``ReturnValuesOnConditionCheckFailure``); one consistent GetItem more
  only on endpoints that ignore that parameter;
* heartbeat: one conditional UpdateItem per lease per period;
* a detached lease (``keep_alive=False``), renewed or released from any
  process through ``lease()``: one conditional UpdateItem (or DeleteItem)
  per ``extend()`` or ``release()``, none in between; ``lease()`` itself sends
  nothing;
* ``take_over``: one conditional UpdateItem; refused, that same one write
  (one consistent GetItem more only on endpoints that do not return the item);
* ``get``: one consistent GetItem; ``available_in``: none;
* waiting: consistent GetItems (cheaper than refused writes) with backoff
  and jitter, capped by ``refresh_period`` and the caller's deadline; a
  write only when the lock looks free or may be taken over. Threads of one
  client waiting for each other send nothing at all.

The wire format of each write is in :mod:`.requests`.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import math
import os
import random
import socket
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from . import errors, item, requests, retries, table, validation
from .clock import SYSTEM_CLOCK, Clock
from .cursor import decode_cursor, encode_cursor
from .exceptions import (
    ClientClosed,
    DynamoDBError,
    DynamoDBUnavailable,
    InvalidLockRequest,
    LockLost,
    LockNotAcquired,
    LockTimeout,
)
from .heartbeat import Heartbeat
from .item import Item, LockInfo
from .lease import Lease, LostCallback, lost_message
from .observations import Observations
from .requests import Holder, LockId, TableLayout
from .schema import TableDescription, validate_table_name

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

acquire_logger = logging.getLogger("dynalock_django.acquire")
release_logger = logging.getLogger("dynalock_django.release")
table_logger = logging.getLogger("dynalock_django.table")

ClientFactory = Callable[[], "DynamoDBClient"]

# Waiting: the first poll comes quickly (most locks are held briefly), then
# backs off exponentially up to refresh_period.
FIRST_POLL_SECONDS = 0.02

_BotoError = (ClientError, BotoCoreError)


@dataclass(frozen=True)
class ScanPage:
    """One page of a scan; pass ``cursor`` back to get the next (None: last page)."""

    locks: list[LockInfo]
    cursor: str | None


class _Outcome(enum.Enum):
    RETRY = "the attempt said nothing about a holder: try again"
    RELEASED = "released"
    ALREADY_RELEASED = "released before, by its own owner"
    GONE = "the item was already gone"


# Versions we tried to write whose answer was lost, with when each write started.
Pending = dict[str, float]


@dataclass(frozen=True)
class _AcquireOptions:
    """What one acquire, try_acquire or take_over asks for, checked: every write it makes uses these."""

    owner_name: str
    lease_duration: float
    keep_alive: bool
    data: bytes | None
    on_lost: LostCallback | None


class LockClient:
    """Advisory locks in a DynamoDB table, compatible with the AWS Java lock client.

    ``dynamodb`` is a boto3 DynamoDB client, or a zero-argument callable that
    makes one. Prefer the callable in servers that fork (gunicorn --preload):
    a forked child calls it to get its own connections. Given a client
    instance, a child builds a new client with the same region, endpoint and
    config, and credentials from boto3's default chain.

    One client runs one heartbeat thread for all its leases. It is safe to
    share between threads; a process normally needs just one.
    """

    # Per-process state, set by _init_process_state (again in a forked child).
    _pid: int
    _mutex: threading.Lock
    _local_release: threading.Condition  # a lease of this client ended
    _held: dict[LockId, Lease]
    _heartbeat: Heartbeat | None
    _observations: Observations
    _closed: threading.Event

    def __init__(
        self,
        dynamodb: DynamoDBClient | ClientFactory,
        table_name: str,
        *,
        lease_duration: float = 20.0,
        heartbeat_period: float = 5.0,
        refresh_period: float = 1.0,
        owner_name: str | None = None,
        partition_key_name: str = "key",
        sort_key_name: str | None = None,
        delete_on_release: bool = False,
        ttl_attribute: str | None = "ttl",
        item_retention: float = 86400.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        validation.check_durations(
            lease_duration, heartbeat_period, refresh_period=refresh_period, item_retention=item_retention
        )
        validation.check_name("partition_key_name", partition_key_name)
        validation.check_name("owner_name", owner_name, optional=True)
        validation.check_name("sort_key_name", sort_key_name, optional=True)
        validation.check_name("ttl_attribute", ttl_attribute, optional=True)
        self.layout = TableLayout(
            table_name=validate_table_name(table_name),
            partition_key_name=partition_key_name,
            sort_key_name=sort_key_name,
            ttl_attribute=ttl_attribute,
            item_retention=float(item_retention),
        )
        self.lease_duration = float(lease_duration)
        self.heartbeat_period = float(heartbeat_period)
        self.refresh_period = float(refresh_period)
        self.delete_on_release = delete_on_release
        self.clock = clock
        self._owner_name_given = owner_name is not None
        self.owner_name = owner_name or _default_owner_name()

        self._factory: ClientFactory | None = dynamodb if callable(dynamodb) else None
        self._dynamodb: DynamoDBClient | None = None if callable(dynamodb) else dynamodb
        self._owns_dynamodb = self._factory is not None
        if self._dynamodb is not None:
            self._check_retry_budget(self._dynamodb)
        self._init_process_state()
        _live_clients.add(self)

    @property
    def table_name(self) -> str:
        return self.layout.table_name

    def __repr__(self) -> str:
        return f"<LockClient table={self.table_name!r} owner={self.owner_name!r} held={len(self._held)}>"

    # ------------------------------------------------------------------ acquire

    def acquire(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        timeout: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
    ) -> Lease:
        """Wait until the lock is ours and return its lease.

        ``timeout`` is in seconds (None waits as long as it takes); when it
        runs out, LockTimeout says who holds the lock. A lock whose holder
        stopped renewing is taken over once its record version number has
        stood unchanged for the item's lease duration on our clock.

        ``owner_name`` and ``lease_duration`` replace the client's for this
        lock. With ``keep_alive=False`` the lease is detached: its owner
        renews and releases it from elsewhere through :meth:`lease`; this
        client neither renews it nor releases it on close, and its threads do
        not wait for it locally.
        """
        lock_id = self._lock_id(key, sort_key)
        options = self._acquire_options(
            lock_id,
            owner_name=owner_name,
            lease_duration=lease_duration,
            keep_alive=keep_alive,
            data=data,
            on_lost=on_lost,
        )
        validation.check_timeout(timeout)
        deadline = None if timeout is None else self.clock.monotonic() + timeout
        pending: Pending = {}
        last_holder: LockInfo | None = None
        write_next = True  # False while the last look says the lock is held and not ours to take yet
        attempts = retries_in_a_row = 0
        error: DynamoDBError | None = None
        try:
            while True:
                self._ensure_open()
                if not self._wait_for_local_release(lock_id, deadline):
                    last_holder = self._local_holder(lock_id)
                    break
                try:
                    if write_next or self._may_take_over(lock_id):
                        outcome = self._try_write(lock_id, options, pending)
                    else:
                        outcome = self._poll(lock_id)
                    error = None
                except DynamoDBUnavailable as unavailable:
                    error, outcome = unavailable, _Outcome.RETRY
                if isinstance(outcome, Lease):
                    return outcome
                attempts += 1
                if isinstance(outcome, LockInfo):
                    last_holder, write_next, retries_in_a_row = outcome, False, 0
                else:
                    write_next = error is None or bool(pending)
                    retries_in_a_row += 1
                # A lock just seen free is tried again at once, but only once in a row.
                quick_retry = error is None and outcome is _Outcome.RETRY and retries_in_a_row == 1
                delay = 0.0 if quick_retry else self._poll_delay(lock_id, attempts)
                if deadline is not None:
                    left = deadline - self.clock.monotonic()
                    if left <= 0:
                        break
                    delay = min(delay, left)
                self._closed.wait(delay)
        finally:
            self._abandon(lock_id, pending, options)
        if error is not None:
            raise error
        raise LockTimeout(
            f"Timed out after {timeout:g}s waiting for lock {key!r}, {describe_holder(last_holder)}.", last_holder
        )

    def try_acquire(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
    ) -> Lease | None:
        """One attempt, never waiting: the lease, or None when someone holds the lock.

        Repeated calls (and :meth:`get`) remember what they saw, so a lock
        whose holder died is taken over by the first call made a whole lease
        after its version was first seen. Raises DynamoDBUnavailable when
        DynamoDB cannot answer. The other options are :meth:`acquire`'s.
        """
        lock_id = self._lock_id(key, sort_key)
        options = self._acquire_options(
            lock_id,
            owner_name=owner_name,
            lease_duration=lease_duration,
            keep_alive=keep_alive,
            data=data,
            on_lost=on_lost,
        )
        self._ensure_open()
        with self._mutex:
            if lock_id in self._held:
                return None  # held by this very client: no need to ask DynamoDB
        pending: Pending = {}
        try:
            outcome = self._try_write(lock_id, options, pending)
            if outcome is _Outcome.RETRY:  # released or deleted as we asked: one more try
                outcome = self._try_write(lock_id, options, pending)
        except DynamoDBUnavailable:
            resolved = self._resolve_unknown_write(lock_id, pending, options)
            if isinstance(resolved, Lease):
                return resolved
            if resolved is None or resolved.is_released:
                raise  # we cannot tell whether the lock is free
            return None
        return outcome if isinstance(outcome, Lease) else None

    @contextlib.contextmanager
    def lock(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        timeout: float | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Iterator[Lease]:
        """``with client.lock(key) as lease:`` acquire, then release at the end of the block.

        If the block succeeds but the lease was lost meanwhile, LockLost is
        raised at the end: the block was not protected for all of its run.
        """
        with self.acquire(key, sort_key=sort_key, timeout=timeout, data=data, on_lost=on_lost) as lease:
            yield lease

    def _try_write(self, lock_id: LockId, options: _AcquireOptions, pending: Pending) -> Lease | LockInfo | _Outcome:
        """One conditional write that takes the lock if it is free, released, expired or ours."""
        observation = self._observations.get(lock_id)
        may_take_over = observation is not None and self.clock.monotonic() >= observation.takeover_at()
        holder = self._new_holder(options.owner_name, options.lease_duration)
        request = requests.acquire(
            self.layout,
            lock_id,
            holder,
            data=options.data,
            observed=observation.info if observation else None,
            may_take_over=may_take_over,
            pending=list(pending),
        )
        started = self.clock.monotonic()
        try:
            response = self.dynamodb.update_item(**request)
        except _BotoError as error:
            if errors.is_condition_failed(error):
                return self._after_refused_acquire(lock_id, error, holder.version, started, options)
            if errors.is_transient(error):
                pending[holder.version] = started
            raise errors.translate(error, table_name=self.table_name) from error
        pending.clear()
        fencing_token = int(response["Attributes"][item.FENCING_TOKEN]["N"])
        return self._grant(lock_id, holder.version, fencing_token, started, options, taken_over=may_take_over)

    def _after_refused_acquire(
        self,
        lock_id: LockId,
        error: BaseException,
        version: str,
        started: float,
        options: _AcquireOptions,
    ) -> Lease | LockInfo | _Outcome:
        stored = self._item_from_refusal(lock_id, error)
        seen_at = self.clock.monotonic()
        if stored is None:
            return _Outcome.RETRY  # released and deleted in between: the lock is free now
        info = self.layout.parse(stored)
        if info.raw_version == {"S": version} and info.fencing_token is not None:
            # An earlier try of this very request (retried inside botocore) was applied.
            return self._grant(lock_id, version, info.fencing_token, started, options, taken_over=False)
        return self._observe(lock_id, info, seen_at)

    def _poll(self, lock_id: LockId) -> LockInfo | _Outcome:
        """Read the lock while waiting (a read costs less than a refused write)."""
        stored = self._read_item(lock_id)
        seen_at = self.clock.monotonic()
        if stored is None:
            return _Outcome.RETRY
        return self._observe(lock_id, self.layout.parse(stored), seen_at)

    def _observe(self, lock_id: LockId, info: LockInfo, seen_at: float) -> LockInfo | _Outcome:
        """Remember a holder's item for takeover; a released one means: write now."""
        if info.is_released:
            if info.bad_fencing_token:
                self._observations.observe(lock_id, info, seen_at)  # the write must overwrite that token
            return _Outcome.RETRY
        self._observations.observe(lock_id, info, seen_at)
        acquire_logger.debug("Lock %r is held by %r", lock_id[0], info.owner_name)
        return info

    def _may_take_over(self, lock_id: LockId) -> bool:
        """The holder's version has stood for its whole lease on our clock."""
        observation = self._observations.get(lock_id)
        return observation is None or self.clock.monotonic() >= observation.takeover_at()

    def _poll_delay(self, lock_id: LockId, attempts: int) -> float:
        delay = min(self.refresh_period, FIRST_POLL_SECONDS * 2.0 ** min(attempts, 30))
        delay *= random.uniform(0.5, 1.0)
        observation = self._observations.get(lock_id)
        if observation is not None:
            # Be there when the holder's lease would run out, not a refresh later.
            until_takeover = observation.takeover_at() - self.clock.monotonic()
            if until_takeover >= 0:
                delay = min(delay, until_takeover + 0.001)
        return delay

    def _resolve_unknown_write(
        self, lock_id: LockId, pending: Pending, options: _AcquireOptions
    ) -> Lease | LockInfo | None:
        """After a failure whose outcome is unknown, read once: if our version is stored, the lock is ours.

        Returns the lease, the item that is there instead, or None when it
        cannot be told (then our possible writes are abandoned).
        """
        try:
            stored = self._read_item(lock_id)
        except DynamoDBError:
            self._abandon(lock_id, pending, options)
            return None
        if stored is None:
            return None
        info = self.layout.parse(stored)
        version = info.record_version_number
        if version in pending and info.owner_name == options.owner_name and info.fencing_token is not None:
            # Count the lease from the start of the write that landed.
            started = pending.pop(version)
            return self._grant(lock_id, version, info.fencing_token, started, options, taken_over=False)
        return info

    def _grant(
        self,
        lock_id: LockId,
        version: str,
        fencing_token: int,
        started: float,
        options: _AcquireOptions,
        *,
        taken_over: bool,
    ) -> Lease:
        lease = Lease(
            self,
            key=lock_id[0],
            sort_key=lock_id[1],
            owner_name=options.owner_name,
            version=version,
            fencing_token=fencing_token,
            data=options.data,
            lease_duration=options.lease_duration,
            valid_from=started,
            acquired_at=datetime.fromtimestamp(self.clock.time(), tz=UTC),
            keep_alive=options.keep_alive,
        )
        if options.on_lost is not None:
            lease.add_lost_callback(options.on_lost)
        self._observations.forget(lock_id)
        if options.keep_alive:
            with self._mutex:
                self._held[lock_id] = lease
                if self._heartbeat is None or not self._heartbeat.is_alive():
                    self._heartbeat = Heartbeat(
                        leases=self._held_leases,
                        renew=self._renew,
                        expire=self._expire,
                        period=self.heartbeat_period,
                        clock=self.clock,
                        name=f"dynalock-heartbeat-{self.table_name}",
                    )
            self._wake_heartbeat()
        if taken_over:
            acquire_logger.info(
                "Took over %r from a holder that stopped renewing (token %d)", lock_id[0], fencing_token
            )
        else:
            acquire_logger.debug("Acquired %r (token %d)", lock_id[0], fencing_token)
        return lease

    def _abandon(self, lock_id: LockId, pending: Pending, options: _AcquireOptions) -> None:
        """Best effort: release versions we may have written but never heard back about."""
        if not pending:
            return
        holder = self._new_holder(options.owner_name, options.lease_duration)
        # Only this process knows these versions, whatever kind of lease they would have granted.
        unanswered = requests.KeptAlive(options.owner_name, tuple(pending))
        try:
            self.dynamodb.update_item(**requests.release(self.layout, lock_id, holder, holding=unanswered))
            acquire_logger.info("Released %r, written by an attempt whose answer was lost", lock_id[0])
        except _BotoError as error:
            acquire_logger.debug("Could not clean up unanswered writes to %r: %s", lock_id[0], error)
        pending.clear()

    def _wait_for_local_release(self, lock_id: LockId, deadline: float | None) -> bool:
        """Wait, without asking DynamoDB, while another thread of this client holds the lock."""
        with self._local_release:
            while lock_id in self._held and not self._closed.is_set():
                left = None if deadline is None else deadline - self.clock.monotonic()
                if left is not None and left <= 0:
                    return False
                self._local_release.wait(left)
        return True

    def _local_holder(self, lock_id: LockId) -> LockInfo | None:
        lease = self._held.get(lock_id)
        if lease is None:
            return None
        return LockInfo(
            key=lease.key,
            sort_key=lease.sort_key,
            owner_name=lease.owner_name,
            lease_duration=lease.lease_duration,
            record_version_number=lease.record_version_number,
            fencing_token=lease.fencing_token,
            data=lease.data,
            is_released=False,
            acquired_at=lease.acquired_at,
            renewed_at=None,
            released_by=None,
        )

    # -------------------------------------------------------- heartbeat & release

    def extend(self, lease: Lease, lease_duration: float | None = None) -> None:
        """Renew ``lease`` now, optionally changing its lease duration; LockLost if it is gone.

        A detached lease (``keep_alive=False``) is renewed even when this
        object believes it ran out: its owner may renew late, and the write's
        condition (owner and fencing token) decides whether it still holds it.
        """
        if lease_duration is not None:
            lease_duration = self._checked_lease_duration(lease_duration, keep_alive=lease.keep_alive)
        self._renew(lease, lease_duration)
        self._wake_heartbeat()

    def _renew(self, lease: Lease, lease_duration: float | None = None) -> None:
        duration = lease.lease_duration if lease_duration is None else lease_duration
        with lease._write_lock:
            if lease.keep_alive:
                lease.ensure_held()
            holder = self._new_holder(lease.owner_name, duration)
            request = requests.renew(self.layout, lease.lock_id, holder, holding=_holding(lease))
            started = self.clock.monotonic()
            try:
                self.dynamodb.update_item(**request)
            except _BotoError as error:
                if not errors.is_condition_failed(error):
                    if errors.is_transient(error):
                        lease._versions.append(holder.version)
                    raise errors.translate(error, table_name=self.table_name) from error
                stored = self._item_from_refusal(lease.lock_id, error)
                info = self.layout.parse(stored) if stored else None
                if info is None or info.raw_version != {"S": holder.version}:
                    message = lost_message(lease, info)
                    self._forget_lease(lease, lost=(message, info))
                    raise LockLost(f"Lost lock {lease.key!r}: {message}.", info) from error
                # else: an earlier try of this very request (retried inside botocore) landed
            lease._mark_renewed(holder.version, started, duration)

    def _expire(self, lease: Lease, reason: str) -> None:
        with lease._write_lock:
            if lease.safe_until <= self.clock.monotonic():
                self._forget_lease(lease, lost=(reason, None), superseded=False)

    def release(self, lease: Lease, *, best_effort: bool = False) -> bool:
        """Release ``lease``; True when this call released it.

        Raises LockLost when the lock is no longer ours (taken over, or
        released by someone else): our release never changes another
        holder's lock. A lease whose safe time ran out is still released if
        nobody took it meanwhile. With ``best_effort=True``, LockLost and
        DynamoDB errors are logged and give False. Releasing twice is a no-op,
        and so is releasing a holding its owner released already (through
        another handle on a detached lease): False.
        """
        if not lease._belongs_to_this_process:
            error = LockLost(f"Lease {lease.key!r} belongs to process {lease._pid}, not this one (after fork).")
            return self._release_failed(error, best_effort)
        with lease._write_lock:
            if lease._state == "released":
                return False
            if lease._superseded:
                error = LockLost(f"Cannot release {lease.key!r}: {lease.lost_reason}.", lease.lost_to)
                return self._release_failed(error, best_effort)
            was_held = lease.is_held()
            outcome: _Outcome | LockLost | DynamoDBError
            try:
                outcome = self._write_release(lease)
            except DynamoDBError as unavailable:
                unavailable.add_note(f"The lock expires by itself within {lease.lease_duration:g}s.")
                outcome = unavailable
            except BaseException:
                self._forget_lease(lease, released=True)
                raise
            if isinstance(outcome, LockLost):
                # Found out by the release, not the heartbeat: the lease was lost all the same, and
                # whoever waits for that (on_lost, wait_until_lost) must hear it.
                self._forget_lease(lease, lost=(str(outcome), outcome.current))
            else:
                self._forget_lease(lease, released=True)
        if isinstance(outcome, DynamoDBError | LockLost):
            return self._release_failed(outcome, best_effort)
        if outcome is _Outcome.ALREADY_RELEASED:
            release_logger.debug("%r (token %d) was already released by its owner", lease.key, lease.fencing_token)
            return False
        if outcome is _Outcome.GONE and not was_held:
            # Deleted, and we cannot tell whether someone held it after our lease ran out.
            error = LockLost(f"Lock {lease.key!r} expired before release and its item is gone.")
            return self._release_failed(error, best_effort)
        release_logger.debug("Released %r (token %d)", lease.key, lease.fencing_token)
        return True

    def _write_release(self, lease: Lease) -> _Outcome | LockLost:
        """One conditional write that marks our lock released (or deletes it)."""
        holder = self._new_holder(lease.owner_name, lease.lease_duration)
        holding = _holding(lease)
        try:
            if self.delete_on_release:
                self.dynamodb.delete_item(**requests.delete(self.layout, lease.lock_id, holding=holding))
            else:
                self.dynamodb.update_item(**requests.release(self.layout, lease.lock_id, holder, holding=holding))
            return _Outcome.RELEASED
        except _BotoError as error:
            if not errors.is_condition_failed(error):
                raise errors.translate(error, table_name=self.table_name) from error
            stored = self._item_from_refusal(lease.lock_id, error)
        if stored is None:
            return _Outcome.GONE  # deleted: by an earlier try of this request, or after our lease ran out
        info = self.layout.parse(stored)
        if info.raw_version == {"S": holder.version}:
            return _Outcome.RELEASED  # an earlier try of this very request landed
        if (
            info.is_released
            and info.released_by is None
            and (info.owner_name, info.fencing_token) == (lease.owner_name, lease.fencing_token)
        ):
            return _Outcome.ALREADY_RELEASED
        return LockLost(f"Cannot release {lease.key!r}: {lost_message(lease, info)}.", info)

    def _release_failed(self, error: DynamoDBError | LockLost, best_effort: bool) -> bool:
        if not best_effort:
            raise error
        release_logger.warning("%s", error)
        return False

    def _forget_lease(
        self,
        lease: Lease,
        *,
        released: bool = False,
        lost: tuple[str, LockInfo | None] | None = None,
        superseded: bool = True,
    ) -> None:
        """Stop renewing ``lease``, record why, and wake local waiters for its lock."""
        with self._local_release:
            if self._held.get(lease.lock_id) is lease:
                del self._held[lease.lock_id]
            self._local_release.notify_all()
        if released:
            lease._mark_released()
        elif lost is not None:
            lease._mark_lost(lost[0], lost[1], superseded=superseded)

    def force_release(self, lock: LockInfo, *, released_by: str) -> LockInfo:
        """Release someone else's lock (an operator's action), and return it as released.

        Conditioned on the holding in ``lock``, as read by the operator (its
        owner and fencing token; heartbeats in between do not matter): if the
        lock changed hands or was released since, LockNotAcquired is raised and
        nothing changes. ``released_by`` is stored so the holder learns who did it.
        """
        lock_id = self._lock_id(lock.key, lock.sort_key)
        request = requests.force_release(
            self.layout, lock, version=_new_version(), released_by=released_by, wall_time=self.clock.time()
        )
        try:
            response = self.dynamodb.update_item(**request)
        except _BotoError as error:
            if not errors.is_condition_failed(error):
                raise errors.translate(error, table_name=self.table_name) from error
            stored = self._item_from_refusal(lock_id, error)
            now = self.layout.parse(stored) if stored else None
            raise LockNotAcquired(
                f"Lock {lock.key!r} changed since it was read ({describe_holder(now)}); nothing was released.", now
            ) from error
        release_logger.warning("Lock %r held by %r was force-released by %s", lock.key, lock.owner_name, released_by)
        return self.layout.parse(response["Attributes"])

    def take_over(
        self,
        lock: LockInfo,
        *,
        data: bytes | None = None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
        on_lost: LostCallback | None = None,
    ) -> Lease:
        """Take someone else's lock now (an operator's or a user's action), and return our lease.

        One conditional write, granted only if the lock is still the holding
        in ``lock`` as read (owner and fencing token, as :meth:`force_release`
        checks): it issues the next fencing token. If the lock changed hands
        or was released since, LockNotAcquired is raised and nothing changes.
        The previous holder finds out at its next renewal. The other options
        are :meth:`acquire`'s.
        """
        lock_id = self._lock_id(lock.key, lock.sort_key)
        options = self._acquire_options(
            lock_id,
            owner_name=owner_name,
            lease_duration=lease_duration,
            keep_alive=keep_alive,
            data=data,
            on_lost=on_lost,
        )
        self._ensure_open()
        holder = self._new_holder(options.owner_name, options.lease_duration)
        started = self.clock.monotonic()
        try:
            response = self.dynamodb.update_item(**requests.take_over(self.layout, lock, holder, data=options.data))
        except _BotoError as error:
            if not errors.is_condition_failed(error):
                raise errors.translate(error, table_name=self.table_name) from error
            stored = self._item_from_refusal(lock_id, error)
            now = self.layout.parse(stored) if stored else None
            if now is None or now.raw_version != {"S": holder.version} or now.fencing_token is None:
                raise LockNotAcquired(
                    f"Lock {lock.key!r} changed since it was read ({describe_holder(now)}); nothing was taken over.",
                    now,
                ) from error
            taken = now  # an earlier try of this very request (retried inside botocore) landed
        else:
            taken = self.layout.parse(response["Attributes"])
        assert taken.fencing_token is not None  # the write issued it
        # INFO: a takeover is asked for by the caller (the admin hands a tab's lock to its next page on every
        # reload); who took whose lock, when it matters, is the caller's to record (the admin's log).
        acquire_logger.info("Lock %r held by %r was taken over by %r", lock.key, lock.owner_name, options.owner_name)
        with self._mutex:
            replaced = self._held.get(lock_id)
        if replaced is not None:
            # This very client held it: that lease ends now, not at a heartbeat that would never come.
            with replaced._write_lock:
                self._forget_lease(replaced, lost=(lost_message(replaced, taken), taken))
        return self._grant(lock_id, holder.version, taken.fencing_token, started, options, taken_over=False)

    # ------------------------------------------------------------------ reading

    def get(self, key: str, *, sort_key: str | None = None) -> LockInfo | None:
        """The lock item as stored now (a consistent read), or None if there is none.

        Like a refused acquire, it remembers the holder's version and when it
        was first seen, so :meth:`available_in` can tell when this client may
        take over a holder that stopped renewing.
        """
        lock_id = self._lock_id(key, sort_key)
        stored = self._read_item(lock_id)
        seen_at = self.clock.monotonic()
        if stored is None:
            return None
        info = self.layout.parse(stored)
        self._observe(lock_id, info, seen_at)
        return info

    def available_in(self, lock: LockInfo | None) -> float:
        """Seconds until this client may take ``lock`` (as read by :meth:`get`); no request.

        0 when there is no item, it is released, or its version has stood for
        the item's lease since this client first saw it; the whole lease when
        this client has not seen this version before.
        """
        if lock is None or lock.is_released:
            return 0.0
        observation = self._observations.get((lock.key, lock.sort_key))
        if observation is None or observation.version != lock.raw_version:
            return lock.lease_duration
        return max(0.0, observation.takeover_at() - self.clock.monotonic())

    def lease(
        self,
        key: str,
        *,
        owner_name: str,
        fencing_token: int,
        sort_key: str | None = None,
        lease_duration: float | None = None,
    ) -> Lease:
        """A handle on a detached lock granted elsewhere to ``owner_name`` under ``fencing_token``; no request.

        ``extend()`` renews it and ``release()`` releases it, each with one
        write conditioned on that owner and token (not on a record version:
        the owner renews through many processes). It counts as held only
        after a successful ``extend()``.
        """
        lock_id = self._lock_id(key, sort_key)
        validation.check_name("owner_name", owner_name)
        validation.check_fencing_token(fencing_token)
        return Lease(
            self,
            key=lock_id[0],
            sort_key=lock_id[1],
            owner_name=owner_name,
            version=None,
            fencing_token=fencing_token,
            data=None,
            lease_duration=self._checked_lease_duration(lease_duration, keep_alive=False),
            valid_from=-math.inf,  # nothing is known about its lease until this handle renews it
            acquired_at=None,
            keep_alive=False,
        )

    def scan(
        self, *, include_released: bool = True, key_prefix: str | None = None, page_size: int | None = None
    ) -> Iterator[LockInfo]:
        """Every lock in the table, one DynamoDB page at a time (never all in memory)."""
        cursor: str | None = None
        while True:
            page = self.scan_page(
                limit=page_size, cursor=cursor, include_released=include_released, key_prefix=key_prefix
            )
            yield from page.locks
            if page.cursor is None:
                return
            cursor = page.cursor

    def scan_page(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        include_released: bool = True,
        key_prefix: str | None = None,
    ) -> ScanPage:
        """One Scan request. ``limit`` caps items *read*, so a filtered page may hold fewer.

        ``key_prefix`` keeps the locks whose key starts with it (a filter: the
        items are still read, and paid for, page by page).
        """
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InvalidLockRequest(f"limit must be a positive integer, not {limit!r}.")
        start_key = decode_cursor(cursor, self.layout.key_names()) if cursor else None
        params = requests.scan(
            self.layout, limit=limit, start_key=start_key, include_released=include_released, key_prefix=key_prefix
        )
        try:
            response = self.dynamodb.scan(**params)
        except _BotoError as error:
            raise errors.translate(error, table_name=self.table_name) from error
        last_key = response.get("LastEvaluatedKey")
        return ScanPage(
            [self.layout.parse(stored) for stored in response.get("Items", [])],
            encode_cursor(last_key) if last_key else None,
        )

    def _read_item(self, lock_id: LockId) -> Item | None:
        try:
            response = self.dynamodb.get_item(
                TableName=self.table_name, Key=self.layout.key(lock_id), ConsistentRead=True
            )
        except _BotoError as error:
            raise errors.translate(error, table_name=self.table_name) from error
        return response.get("Item")

    def _item_from_refusal(self, lock_id: LockId, error: BaseException) -> Item | None:
        """The item that failed our condition; read it when the endpoint did not return it."""
        assert isinstance(error, ClientError)
        stored: Item | None = error.response.get("Item")  # type: ignore[assignment]
        if stored is None:
            stored = self._read_item(lock_id)
        return stored

    # -------------------------------------------------------------------- table

    def describe_table(self) -> TableDescription:
        """Status, key schema, TTL and what is wrong for locks (TableNotFound if missing)."""
        return table.describe(self.dynamodb, self.layout)

    def check_table(self) -> TableDescription:
        """describe_table(), raising TableSchemaError if the table cannot hold these locks."""
        return table.check(self.dynamodb, self.layout)

    def create_table_request(self, *, provisioned: tuple[int, int] | None = None) -> dict[str, Any]:
        """The CreateTable request ``create_table`` sends (for dry runs)."""
        return table.create_request(self.layout, provisioned)

    def create_table(
        self,
        *,
        provisioned: tuple[int, int] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> TableDescription:
        """Create the lock table (on-demand unless ``provisioned=(read, write)``) and enable TTL.

        Idempotent: an existing table is checked, not recreated. Returns once
        the table is ACTIVE, reporting each status seen to ``on_progress``.
        On an endpoint without the TTL API the table is created all the same,
        with ``ttl_status`` ``"UNAVAILABLE"``: locks work, old items stay.
        """
        return table.create(
            self.dynamodb,
            self.layout,
            provisioned=provisioned,
            report=on_progress or (lambda message: table_logger.info("%s", message)),
            stop=self._closed,
        )

    # ---------------------------------------------------------------- lifecycle

    @property
    def dynamodb(self) -> DynamoDBClient:
        """The boto3 client this process uses (built on first use from a factory)."""
        client = self._dynamodb
        if client is None:
            assert self._factory is not None
            with self._mutex:
                if self._dynamodb is None:
                    self._dynamodb = self._factory()
                    self._check_retry_budget(self._dynamodb)
                client = self._dynamodb
        return client

    def held_leases(self) -> list[Lease]:
        """The leases this client holds and renews now."""
        return self._held_leases()

    def close(self, *, release: bool = True) -> None:
        """Stop the heartbeat and release every held lease (unless ``release=False``)."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._local_release:
            self._local_release.notify_all()
        if self._heartbeat is not None:
            self._heartbeat.stop(timeout=self.lease_duration)
        for lease in self._held_leases():
            if release:
                lease.release(best_effort=True)
            else:
                self._forget_lease(lease, lost=("the client was closed without releasing", None), superseded=False)
        if self._owns_dynamodb and self._dynamodb is not None:
            self._dynamodb.close()
        _live_clients.discard(self)

    def __enter__(self) -> LockClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _init_process_state(self) -> None:
        """Everything that must not be shared with a forked parent."""
        self._pid = os.getpid()
        self._mutex = threading.Lock()
        self._local_release = threading.Condition(self._mutex)
        self._held = {}
        self._heartbeat = None
        self._observations = Observations()
        self._closed = threading.Event()

    def _after_fork_in_child(self) -> None:
        # The parent's leases, heartbeat thread and connections stay the
        # parent's: the child starts empty, under a new owner name.
        was_closed = self._closed.is_set()
        if self._dynamodb is not None and self._factory is None:
            self._factory = _rebuild_factory(self._dynamodb)
            self._owns_dynamodb = True
        if self._factory is not None:
            self._dynamodb = None
        if not self._owner_name_given:
            self.owner_name = _default_owner_name()
        self._init_process_state()
        if was_closed:
            self._closed.set()

    def _check_retry_budget(self, dynamodb: DynamoDBClient) -> None:
        retries.warn_if_too_slow(
            dynamodb.meta.config, lease_duration=self.lease_duration, heartbeat_period=self.heartbeat_period
        )

    def _held_leases(self) -> list[Lease]:
        with self._mutex:
            return list(self._held.values())

    def _ensure_open(self) -> None:
        if self._closed.is_set():
            raise ClientClosed(f"{self!r} is closed; create a new LockClient.")

    def _wake_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.wake()

    def _new_holder(self, owner_name: str, lease_duration: float) -> Holder:
        return Holder(owner_name, _new_version(), lease_duration, self.clock.time())

    def _lock_id(self, key: str, sort_key: str | None) -> LockId:
        validation.check_key("key", key, item.MAX_PARTITION_KEY_BYTES)
        if self.layout.sort_key_name is None:
            if sort_key is not None:
                raise InvalidLockRequest(
                    "sort_key given, but this client has no sort_key_name: its table's key is "
                    f"{self.layout.partition_key_name!r} alone."
                )
        else:
            if sort_key is None:
                raise InvalidLockRequest(
                    f"This client's table has a sort key {self.layout.sort_key_name!r}: pass sort_key=."
                )
            validation.check_key("sort_key", sort_key, item.MAX_SORT_KEY_BYTES)
        return (key, sort_key)

    def _acquire_options(
        self,
        lock_id: LockId,
        *,
        owner_name: str | None,
        lease_duration: float | None,
        keep_alive: bool,
        data: bytes | None,
        on_lost: LostCallback | None,
    ) -> _AcquireOptions:
        validation.check_name("owner_name", owner_name, optional=True)
        options = _AcquireOptions(
            owner_name=owner_name or self.owner_name,
            lease_duration=self._checked_lease_duration(lease_duration, keep_alive=keep_alive),
            keep_alive=keep_alive,
            data=data,
            on_lost=on_lost,
        )
        self._check_data(lock_id, options)
        return options

    def _checked_lease_duration(self, lease_duration: float | None, *, keep_alive: bool) -> float:
        """A lease's own duration, the client's by default.

        Only a lease the heartbeat renews needs room for a failed renewal in it.
        """
        if lease_duration is None:
            return self.lease_duration
        if keep_alive:
            validation.check_durations(lease_duration, self.heartbeat_period)
        else:
            validation.check_positive("lease_duration", lease_duration)
        return float(lease_duration)

    def _check_data(self, lock_id: LockId, options: _AcquireOptions) -> None:
        if options.data is None:
            return
        # The largest item an acquire can leave, before its data.
        largest: Item = {
            **self.layout.key(lock_id),
            item.OWNER_NAME: {"S": options.owner_name},
            item.LEASE_DURATION: {"S": str(round(options.lease_duration * 1000))},
            item.RECORD_VERSION_NUMBER: {"S": _new_version()},
            item.FENCING_TOKEN: {"N": "9" * 20},
            item.ACQUIRED_AT: {"N": "9" * 14},
            item.RENEWED_AT: {"N": "9" * 14},
            item.IS_RELEASED: {"S": item.IS_RELEASED_VALUE},
            item.RELEASED_BY: {"S": "x" * 256},
        }
        if self.layout.ttl_attribute:
            largest[self.layout.ttl_attribute] = {"N": "9" * 11}
        validation.check_data(options.data, largest)


# ----------------------------------------------------------------------- helpers


def describe_holder(holder: LockInfo | None) -> str:
    if holder is None:
        return "holder unknown"
    if holder.is_malformed:
        return f"held by an unreadable item ({'; '.join(holder.problems)})"
    return f"held by {holder.owner_name!r} (lease {holder.lease_duration:g}s, token {holder.fencing_token})"


def _new_version() -> str:
    return str(uuid.uuid4())


def _holding(lease: Lease) -> requests.Holding:
    """How the writes for ``lease`` recognise its holding (the rule is :func:`.requests._still_held`'s)."""
    if lease.keep_alive:
        return requests.KeptAlive(lease.owner_name, tuple(lease._versions))
    return requests.Detached(lease.owner_name, lease.fencing_token)


def _default_owner_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _rebuild_factory(client: DynamoDBClient) -> ClientFactory:
    region, endpoint, config = client.meta.region_name, client.meta.endpoint_url, client.meta.config

    def build() -> DynamoDBClient:
        return boto3.session.Session().client("dynamodb", region_name=region, endpoint_url=endpoint, config=config)

    return build


_live_clients: weakref.WeakSet[LockClient] = weakref.WeakSet()


def _reset_clients_after_fork() -> None:
    for client in list(_live_clients):
        client._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_clients_after_fork)
