"""LockClient: the AWS DynamoDB Lock Client protocol over boto3's low-level client.

Request budget (each a single DynamoDB call; botocore may retry it inside):

* uncontended acquire: one conditional UpdateItem that also issues the
  fencing token; release: one conditional UpdateItem (or DeleteItem);
* failed ``try_acquire``: that one write, whose error carries the holder's
  item (``ReturnValuesOnConditionCheckFailure``); one consistent GetItem more
  only on endpoints that ignore that parameter;
* heartbeat: one conditional UpdateItem per lease per period;
* waiting: consistent GetItems (cheaper than failed writes), with backoff
  and jitter capped by ``refresh_period`` and the caller's deadline, and a
  write only when the lock looks free or may be taken over.
"""

from __future__ import annotations

import contextlib
import enum
import logging
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

from . import errors, item, retries, schema
from .clock import SYSTEM_CLOCK, Clock
from .cursor import decode_cursor, encode_cursor
from .exceptions import (
    ClientClosed,
    ConfigurationError,
    DynamoDBError,
    DynamoDBUnavailable,
    InvalidLockRequest,
    LockLost,
    LockNotAcquired,
    LockTimeout,
    TableSchemaError,
)
from .expressions import Expressions, update_expression
from .heartbeat import Heartbeat
from .item import Item, LockInfo, parse_item
from .lease import Lease, LostCallback, lost_message
from .observations import LockId, Observations

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


class _Retry:
    """An acquire attempt whose outcome says nothing about the holder: try again."""


_RETRY = _Retry()


class _Released(enum.Enum):
    DONE = "released"
    GONE = "item already gone"


_DONE, _GONE = _Released.DONE, _Released.GONE

# Versions we tried to write whose outcome is unknown, with when each write started.
Pending = dict[str, float]


class LockClient:
    """Advisory locks in a DynamoDB table, compatible with the AWS Java lock client.

    ``dynamodb`` is a boto3 DynamoDB client, or a zero-argument callable that
    makes one. Prefer the callable in servers that fork (gunicorn --preload):
    a forked child calls it to get its own connections. Given a client
    instance, a child builds a new client with the same region, endpoint and
    config, and credentials from boto3's default chain.

    One client runs one heartbeat thread for all its leases. It is safe to
    share between threads; a process should normally hold just one.
    """

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
        self.table_name = schema.validate_table_name(table_name)
        _validate_durations(lease_duration, heartbeat_period, refresh_period, item_retention)
        for label, value in (("partition_key_name", partition_key_name), ("owner_name", owner_name)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigurationError(f"{label} must be a non-empty string, not {value!r}.")
        if sort_key_name is not None and (not isinstance(sort_key_name, str) or not sort_key_name):
            raise ConfigurationError(f"sort_key_name must be a non-empty string or None, not {sort_key_name!r}.")
        if ttl_attribute is not None and (not isinstance(ttl_attribute, str) or not ttl_attribute):
            raise ConfigurationError(f"ttl_attribute must be a non-empty string or None, not {ttl_attribute!r}.")

        self.lease_duration = float(lease_duration)
        self.heartbeat_period = float(heartbeat_period)
        self.refresh_period = float(refresh_period)
        self.partition_key_name = partition_key_name
        self.sort_key_name = sort_key_name
        self.delete_on_release = delete_on_release
        self.ttl_attribute = ttl_attribute
        self.item_retention = float(item_retention)
        self.clock = clock
        self._owner_name_given = owner_name is not None
        self.owner_name = owner_name or _default_owner_name()

        if callable(dynamodb):
            self._factory: ClientFactory | None = dynamodb
            self._dynamodb: DynamoDBClient | None = None
        else:
            self._factory = None
            self._dynamodb = dynamodb
        self._owns_dynamodb = self._factory is not None
        if self._dynamodb is not None:
            self._check_retry_budget(self._dynamodb)
        self._init_process_state()
        _live_clients.add(self)

    def _init_process_state(self) -> None:
        """Everything that must not be shared with a forked parent."""
        self._pid = os.getpid()
        self._mutex = threading.Lock()
        self._released = threading.Condition(self._mutex)  # a local lease ended
        self._held: dict[LockId, Lease] = {}
        self._heartbeat: Heartbeat | None = None
        self._observations = Observations()
        self._closed = threading.Event()

    def _after_fork_in_child(self) -> None:
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

    def _check_retry_budget(self, dynamodb: DynamoDBClient) -> None:
        retries.warn_if_too_slow(
            dynamodb.meta.config, lease_duration=self.lease_duration, heartbeat_period=self.heartbeat_period
        )

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
    ) -> Lease:
        """Wait until the lock is ours and return its lease.

        ``timeout`` is in seconds (None waits as long as it takes); when it
        runs out, LockTimeout says who holds the lock. A lock whose holder
        stopped renewing is taken over once its record version number has
        stood unchanged for the item's lease duration on our clock.
        """
        lock_id = self._lock_id(key, sort_key)
        self._check_data(lock_id, data)
        if timeout is not None and (not _is_number(timeout) or timeout < 0):
            raise InvalidLockRequest(f"timeout must be a number of seconds >= 0 or None, not {timeout!r}.")
        deadline = None if timeout is None else self.clock.monotonic() + timeout
        pending: Pending = {}
        last_holder: LockInfo | None = None
        write_next = True  # False while the last look says the lock is held and not yet ours to take
        attempts = retries_in_a_row = 0
        error: DynamoDBError | None = None
        try:
            while True:
                self._ensure_open()
                if not self._wait_for_local_release(lock_id, deadline):
                    last_holder = self._held_info(lock_id)
                    break
                try:
                    if write_next or self._may_take_over(lock_id):
                        outcome = self._try_write(lock_id, data, pending, on_lost)
                    else:
                        outcome = self._poll(lock_id)
                    error = None
                except DynamoDBUnavailable as unavailable:
                    error, outcome = unavailable, _RETRY
                if isinstance(outcome, Lease):
                    return outcome
                attempts += 1
                if isinstance(outcome, LockInfo):
                    last_holder, write_next, retries_in_a_row = outcome, False, 0
                else:
                    write_next = error is None or bool(pending)
                    retries_in_a_row += 1
                # A lock seen free is tried again at once, but only once in a row.
                quick_retry = error is None and not isinstance(outcome, LockInfo) and retries_in_a_row == 1
                delay = 0.0 if quick_retry else self._poll_delay(lock_id, attempts)
                if deadline is not None:
                    left = deadline - self.clock.monotonic()
                    if left <= 0:
                        break
                    delay = min(delay, left)
                self._closed.wait(delay)
        except BaseException:
            self._abandon(lock_id, pending)
            raise
        self._abandon(lock_id, pending)
        if error is not None:
            raise error
        raise LockTimeout(
            f"Timed out after {timeout:g}s waiting for lock {key!r}, {_describe_holder(last_holder)}.", last_holder
        )

    def try_acquire(
        self,
        key: str,
        *,
        sort_key: str | None = None,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
    ) -> Lease | None:
        """One attempt, never waiting: the lease, or None when someone holds the lock.

        Repeated calls remember what they saw, so a lock whose holder died is
        taken over by the first call made a whole lease after its version was
        first seen. Raises DynamoDBUnavailable when DynamoDB cannot answer.
        """
        lock_id = self._lock_id(key, sort_key)
        self._check_data(lock_id, data)
        self._ensure_open()
        with self._mutex:
            if lock_id in self._held:
                return None  # held by this very client: no need to ask DynamoDB
        pending: Pending = {}
        try:
            outcome = self._try_write(lock_id, data, pending, on_lost)
            if outcome is _RETRY:  # it was released as we asked: one more try
                outcome = self._try_write(lock_id, data, pending, on_lost)
        except DynamoDBUnavailable:
            resolved = self._resolve_unknown_write(lock_id, pending, on_lost)
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

    def _try_write(
        self, lock_id: LockId, data: bytes | None, pending: Pending, on_lost: LostCallback | None
    ) -> Lease | LockInfo | _Retry:
        """One conditional write that takes the lock if it is free, released, expired or ours."""
        version = _new_version()
        observation = self._observations.get(lock_id)
        now = self.clock.monotonic()
        takeover = observation is not None and now >= observation.takeover_at()
        exprs = Expressions()
        pk, rvn, owner = (
            exprs.name(self.partition_key_name),
            exprs.name(item.RECORD_VERSION_NUMBER),
            exprs.name(item.OWNER_NAME),
        )
        released = f"{exprs.name(item.IS_RELEASED)} = {exprs.string(item.IS_RELEASED_VALUE)}"
        token = exprs.name(item.FENCING_TOKEN)
        wall_ms = self._wall_ms()

        if observation is not None and observation.info.bad_fencing_token:
            # The stored token cannot be incremented: overwrite it, but only the
            # very item we saw, once it is released or its lease has passed.
            same_item = self._version_clause(exprs, observation.version)
            condition = same_item if takeover else f"{same_item} AND {released}"
            token_update = f"{token} = {exprs.number(wall_ms)}"
        else:
            free = [f"attribute_not_exists({pk})", released]
            if takeover:
                assert observation is not None
                free.append(self._version_clause(exprs, observation.version))
            if pending:
                free.append(
                    f"({exprs.one_of(item.RECORD_VERSION_NUMBER, pending)} AND {owner} = {exprs.string(self.owner_name)})"
                )
            number = exprs.string("N")
            condition = (
                f"({' OR '.join(free)}) AND (attribute_not_exists({token}) OR attribute_type({token}, {number}))"
            )
            token_update = f"{token} = if_not_exists({token}, {exprs.number(wall_ms)}) + {exprs.number(1)}"

        sets = self._holder_updates(exprs, version, self.lease_duration, wall_ms, acquired=True)
        removes: list[str] = []
        sets.append(token_update)
        if data is not None:
            sets.append(f"{exprs.name(item.DATA)} = {exprs.value({'B': data})}")
        else:
            removes.append(exprs.name(item.DATA))
        removes += [exprs.name(item.IS_RELEASED), exprs.name(item.RELEASED_BY)]

        started = self.clock.monotonic()
        try:
            response = self.dynamodb.update_item(
                TableName=self.table_name,
                Key=self._key(lock_id),
                UpdateExpression=update_expression(sets, removes),
                ConditionExpression=condition,
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **exprs.params(),
            )
        except _BotoError as error:
            if errors.is_condition_failed(error):
                return self._after_refused_write(lock_id, error, version, started, data, on_lost)
            if errors.is_transient(error):
                pending[version] = started
            raise errors.translate(error, table_name=self.table_name) from error
        pending.clear()
        fencing_token = int(response["Attributes"][item.FENCING_TOKEN]["N"])
        return self._grant(lock_id, version, fencing_token, data, started, on_lost, taken_over=takeover)

    def _after_refused_write(
        self,
        lock_id: LockId,
        error: BaseException,
        version: str,
        started: float,
        data: bytes | None,
        on_lost: LostCallback | None,
    ) -> Lease | LockInfo | _Retry:
        stored = self._item_from_refusal(lock_id, error)
        seen_at = self.clock.monotonic()
        if stored is None:
            return _RETRY  # released and deleted in between: the lock is free now
        info = parse_item(stored, self.partition_key_name, self.sort_key_name)
        if info.raw_version == {"S": version} and info.fencing_token is not None:
            # An earlier attempt of this very request (retried by botocore) was applied.
            return self._grant(lock_id, version, info.fencing_token, data, started, on_lost, taken_over=False)
        if info.is_released and not info.bad_fencing_token:
            return _RETRY  # released between our condition and now
        self._observations.observe(lock_id, info, seen_at)
        acquire_logger.debug("Lock %r is held by %r", lock_id[0], info.owner_name)
        return info

    def _poll(self, lock_id: LockId) -> LockInfo | _Retry:
        """Read the lock while waiting (a read costs less than a refused write)."""
        stored = self._read_item(lock_id)
        seen_at = self.clock.monotonic()
        if stored is None:
            return _RETRY
        info = parse_item(stored, self.partition_key_name, self.sort_key_name)
        if info.is_released:
            return _RETRY
        self._observations.observe(lock_id, info, seen_at)
        return info

    def _may_take_over(self, lock_id: LockId) -> bool:
        """The holder's version has stood for its whole lease on our clock."""
        observation = self._observations.get(lock_id)
        return observation is None or self.clock.monotonic() >= observation.takeover_at()

    def _poll_delay(self, lock_id: LockId, polls: int) -> float:
        delay = min(self.refresh_period, FIRST_POLL_SECONDS * 2.0 ** min(polls, 30))
        delay *= random.uniform(0.5, 1.0)
        observation = self._observations.get(lock_id)
        if observation is not None:
            # Be there when the holder's lease would run out, not a refresh later.
            until_takeover = observation.takeover_at() - self.clock.monotonic()
            if until_takeover >= 0:
                delay = min(delay, until_takeover + 0.001)
        return delay

    def _resolve_unknown_write(
        self, lock_id: LockId, pending: Pending, on_lost: LostCallback | None
    ) -> Lease | LockInfo | None:
        """After a failure whose outcome is unknown, read once: if our version is stored, the lock is ours.

        Returns the lease, the item that is there instead, or None when it
        cannot be told (then our possible writes are abandoned).
        """
        try:
            stored = self._read_item(lock_id)
        except DynamoDBError:
            self._abandon(lock_id, pending)
            return None
        if stored is None:
            return None
        info = parse_item(stored, self.partition_key_name, self.sort_key_name)
        version = info.record_version_number
        if version in pending and info.owner_name == self.owner_name and info.fencing_token is not None:
            # Count the lease from the start of the write that landed.
            return self._grant(
                lock_id, version, info.fencing_token, info.data, pending.pop(version), on_lost, taken_over=False
            )
        return info

    def _grant(
        self,
        lock_id: LockId,
        version: str,
        fencing_token: int,
        data: bytes | None,
        started: float,
        on_lost: LostCallback | None,
        *,
        taken_over: bool,
    ) -> Lease:
        lease = Lease(
            self,
            key=lock_id[0],
            sort_key=lock_id[1],
            owner_name=self.owner_name,
            version=version,
            fencing_token=fencing_token,
            data=data,
            lease_duration=self.lease_duration,
            valid_from=started,
            acquired_at=datetime.fromtimestamp(self.clock.time(), tz=UTC),
        )
        if on_lost is not None:
            lease.add_lost_callback(on_lost)
        self._observations.forget(lock_id)
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

    def _abandon(self, lock_id: LockId, pending: Pending) -> None:
        """Best effort: release versions we may have written but never learned about."""
        if not pending:
            return
        exprs = Expressions()
        condition = f"{exprs.one_of(item.RECORD_VERSION_NUMBER, pending)} AND {exprs.name(item.OWNER_NAME)} = {exprs.string(self.owner_name)}"
        sets = self._holder_updates(exprs, _new_version(), self.lease_duration, self._wall_ms(), acquired=False)
        sets.append(f"{exprs.name(item.IS_RELEASED)} = {exprs.string(item.IS_RELEASED_VALUE)}")
        try:
            self.dynamodb.update_item(
                TableName=self.table_name,
                Key=self._key(lock_id),
                UpdateExpression=update_expression(sets, []),
                ConditionExpression=condition,
                **exprs.params(),
            )
            acquire_logger.info("Released %r, written by an attempt whose answer was lost", lock_id[0])
        except _BotoError as error:
            acquire_logger.debug("Could not clean up unknown writes to %r: %s", lock_id[0], error)
        pending.clear()

    def _wait_for_local_release(self, lock_id: LockId, deadline: float | None) -> bool:
        """Wait, without asking DynamoDB, while another thread of this client holds the lock."""
        with self._released:
            while lock_id in self._held and not self._closed.is_set():
                left = None if deadline is None else deadline - self.clock.monotonic()
                if left is not None and left <= 0:
                    return False
                self._released.wait(left)
        return True

    def _held_info(self, lock_id: LockId) -> LockInfo | None:
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
        """Renew ``lease`` now, optionally changing its lease duration; LockLost if it is gone."""
        if lease_duration is not None:
            _validate_durations(lease_duration, self.heartbeat_period, self.refresh_period, self.item_retention)
        self._renew(lease, lease_duration)
        self._wake_heartbeat()

    def _renew(self, lease: Lease, lease_duration: float | None = None) -> None:
        duration = lease.lease_duration if lease_duration is None else float(lease_duration)
        with lease._write_lock:
            lease.ensure_held()
            version = _new_version()
            exprs = Expressions()
            condition = (
                f"{exprs.one_of(item.RECORD_VERSION_NUMBER, lease._versions)}"
                f" AND {exprs.name(item.OWNER_NAME)} = {exprs.string(lease.owner_name)}"
                f" AND attribute_not_exists({exprs.name(item.IS_RELEASED)})"
            )
            sets = self._holder_updates(exprs, version, duration, self._wall_ms(), acquired=False)
            started = self.clock.monotonic()
            try:
                self.dynamodb.update_item(
                    TableName=self.table_name,
                    Key=self._key(lease.lock_id),
                    UpdateExpression=update_expression(sets, []),
                    ConditionExpression=condition,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    **exprs.params(),
                )
            except _BotoError as error:
                if errors.is_condition_failed(error):
                    self._after_refused_renewal(lease, error, version, started, duration)
                    return
                if errors.is_transient(error):
                    lease._versions.append(version)
                raise errors.translate(error, table_name=self.table_name) from error
            lease._mark_renewed(version, started, duration)

    def _after_refused_renewal(
        self, lease: Lease, error: BaseException, version: str, started: float, duration: float
    ) -> None:
        stored = self._item_from_refusal(lease.lock_id, error)
        info = parse_item(stored, self.partition_key_name, self.sort_key_name) if stored else None
        if info is not None and info.raw_version == {"S": version}:
            lease._mark_renewed(version, started, duration)  # an earlier try of this request landed
            return
        message = lost_message(lease, info)
        self._forget_lease(lease, lost=(message, info))
        raise LockLost(f"Lost lock {lease.key!r}: {message}.", info)

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
        DynamoDB errors are logged and give False. Releasing twice is a no-op.
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
            try:
                outcome = self._write_release(lease)
            except DynamoDBError as unavailable:
                self._forget_lease(lease, released=True)
                unavailable.add_note(f"The lock expires by itself within {lease.lease_duration:g}s.")
                return self._release_failed(unavailable, best_effort)
            self._forget_lease(lease, released=True)
        if isinstance(outcome, LockLost):
            return self._release_failed(outcome, best_effort)
        if outcome is _GONE and not was_held:
            # Deleted, and we cannot tell whether someone held it after our lease ran out.
            error = LockLost(f"Lock {lease.key!r} expired before release and its item is gone.")
            return self._release_failed(error, best_effort)
        release_logger.debug("Released %r (token %d)", lease.key, lease.fencing_token)
        return True

    def _write_release(self, lease: Lease) -> _Released | LockLost:
        """One conditional write that marks our lock released (or deletes it)."""
        exprs = Expressions()
        condition = (
            f"{exprs.one_of(item.RECORD_VERSION_NUMBER, lease._versions)}"
            f" AND {exprs.name(item.OWNER_NAME)} = {exprs.string(lease.owner_name)}"
        )
        version = _new_version()
        try:
            if self.delete_on_release:
                self.dynamodb.delete_item(
                    TableName=self.table_name,
                    Key=self._key(lease.lock_id),
                    ConditionExpression=condition,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    **exprs.params(),
                )
            else:
                sets = self._holder_updates(exprs, version, lease.lease_duration, self._wall_ms(), acquired=False)
                sets.append(f"{exprs.name(item.IS_RELEASED)} = {exprs.string(item.IS_RELEASED_VALUE)}")
                self.dynamodb.update_item(
                    TableName=self.table_name,
                    Key=self._key(lease.lock_id),
                    UpdateExpression=update_expression(sets, []),
                    ConditionExpression=condition,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    **exprs.params(),
                )
            return _DONE
        except _BotoError as error:
            if not errors.is_condition_failed(error):
                raise errors.translate(error, table_name=self.table_name) from error
            stored = self._item_from_refusal(lease.lock_id, error)
        if stored is None:
            return _GONE  # deleted: by an earlier try of this request, or after our lease ran out
        info = parse_item(stored, self.partition_key_name, self.sort_key_name)
        if info.raw_version == {"S": version}:
            return _DONE  # an earlier try of this request (retried by botocore) landed
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
        """Stop renewing ``lease`` and wake local waiters for its lock."""
        with self._released:
            if self._held.get(lease.lock_id) is lease:
                del self._held[lease.lock_id]
            self._released.notify_all()
        if released:
            lease._mark_released()
        elif lost is not None:
            lease._mark_lost(lost[0], lost[1], superseded=superseded)

    def force_release(self, lock: LockInfo, *, released_by: str) -> LockInfo:
        """Release someone else's lock (an operator's action), and return it as released.

        Conditioned on the version in ``lock``, as read by the operator: if
        the lock changed hands since, LockNotAcquired is raised and nothing
        changes. ``released_by`` is stored so the holder learns who did it.
        """
        lock_id = self._lock_id(lock.key, lock.sort_key)
        exprs = Expressions()
        condition = self._version_clause(exprs, lock.raw_version)
        sets = [
            f"{exprs.name(item.IS_RELEASED)} = {exprs.string(item.IS_RELEASED_VALUE)}",
            f"{exprs.name(item.RECORD_VERSION_NUMBER)} = {exprs.string(_new_version())}",
            f"{exprs.name(item.RELEASED_BY)} = {exprs.string(released_by)}",
        ]
        if self.ttl_attribute:
            sets.append(f"{exprs.name(self.ttl_attribute)} = {exprs.number(self._ttl_seconds(0))}")
        try:
            response = self.dynamodb.update_item(
                TableName=self.table_name,
                Key=self._key(lock_id),
                UpdateExpression=update_expression(sets, []),
                ConditionExpression=condition,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **exprs.params(),
            )
        except _BotoError as error:
            if errors.is_condition_failed(error):
                stored = self._item_from_refusal(lock_id, error)
                now = parse_item(stored, self.partition_key_name, self.sort_key_name) if stored else None
                raise LockNotAcquired(
                    f"Lock {lock.key!r} changed since it was read ({_describe_holder(now)}); nothing was released.",
                    now,
                ) from error
            raise errors.translate(error, table_name=self.table_name) from error
        release_logger.warning("Lock %r held by %r was force-released by %s", lock.key, lock.owner_name, released_by)
        return parse_item(response["Attributes"], self.partition_key_name, self.sort_key_name)

    # ------------------------------------------------------------------ reading

    def get(self, key: str, *, sort_key: str | None = None) -> LockInfo | None:
        """The lock item as stored now (a consistent read), or None if there is none."""
        stored = self._read_item(self._lock_id(key, sort_key))
        return parse_item(stored, self.partition_key_name, self.sort_key_name) if stored else None

    def scan(self, *, include_released: bool = True, page_size: int | None = None) -> Iterator[LockInfo]:
        """Every lock in the table, one DynamoDB page at a time (never all in memory)."""
        cursor: str | None = None
        while True:
            page = self.scan_page(limit=page_size, cursor=cursor, include_released=include_released)
            yield from page.locks
            if page.cursor is None:
                return
            cursor = page.cursor

    def scan_page(
        self, *, limit: int | None = None, cursor: str | None = None, include_released: bool = True
    ) -> ScanPage:
        """One Scan request. ``limit`` caps items *read*, so a filtered page may hold fewer."""
        params: dict[str, Any] = {"TableName": self.table_name}
        if limit is not None:
            if not isinstance(limit, int) or limit < 1:
                raise InvalidLockRequest(f"limit must be a positive integer, not {limit!r}.")
            params["Limit"] = limit
        if cursor:
            params["ExclusiveStartKey"] = decode_cursor(cursor, self._key_names())
        if not include_released:
            exprs = Expressions()
            params["FilterExpression"] = f"attribute_not_exists({exprs.name(item.IS_RELEASED)})"
            params.update(exprs.params())
        try:
            response = self.dynamodb.scan(**params)
        except _BotoError as error:
            raise errors.translate(error, table_name=self.table_name) from error
        locks = [parse_item(i, self.partition_key_name, self.sort_key_name) for i in response.get("Items", [])]
        last_key = response.get("LastEvaluatedKey")
        return ScanPage(locks, encode_cursor(last_key) if last_key else None)

    def _read_item(self, lock_id: LockId) -> Item | None:
        try:
            response = self.dynamodb.get_item(TableName=self.table_name, Key=self._key(lock_id), ConsistentRead=True)
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

    def describe_table(self) -> schema.TableDescription:
        """Status, key schema, TTL and what is wrong for locks (TableNotFound if missing)."""
        try:
            table = self.dynamodb.describe_table(TableName=self.table_name)["Table"]
            ttl = self.dynamodb.describe_time_to_live(TableName=self.table_name)["TimeToLiveDescription"]
        except _BotoError as error:
            raise errors.translate(error, table_name=self.table_name) from error
        return schema.describe(
            table,
            ttl,
            partition_key_name=self.partition_key_name,
            sort_key_name=self.sort_key_name,
            ttl_attribute=self.ttl_attribute,
        )

    def check_table(self) -> schema.TableDescription:
        """describe_table(), raising TableSchemaError if the table cannot hold these locks."""
        description = self.describe_table()
        if description.problems:
            raise TableSchemaError(
                f"Table {self.table_name!r} cannot hold these locks: " + "; ".join(description.problems)
            )
        return description

    def create_table_request(self, *, provisioned: tuple[int, int] | None = None) -> dict[str, Any]:
        """The CreateTable request ``create_table`` sends (for dry runs)."""
        return dict(
            schema.create_table_request(
                self.table_name,
                partition_key_name=self.partition_key_name,
                sort_key_name=self.sort_key_name,
                provisioned=provisioned,
            )
        )

    def create_table(
        self,
        *,
        provisioned: tuple[int, int] | None = None,
        wait: bool = True,
        poll_interval: float = 1.0,
        on_progress: Callable[[str], None] | None = None,
    ) -> schema.TableDescription:
        """Create the lock table (on-demand unless ``provisioned=(read, write)``) and enable TTL.

        Idempotent: an existing table is checked, not recreated. With
        ``wait`` it returns once the table is ACTIVE, reporting each status
        seen to ``on_progress``.
        """
        report = on_progress or (lambda message: table_logger.info("%s", message))
        request = self.create_table_request(provisioned=provisioned)
        try:
            self.dynamodb.create_table(**request)
            report(f"Creating table {self.table_name!r}")
        except _BotoError as error:
            if errors.error_code(error) != "ResourceInUseException":
                raise errors.translate(error, table_name=self.table_name) from error
            report(f"Table {self.table_name!r} already exists")
        description = self.check_table()
        while wait and description.status != "ACTIVE":
            report(f"Table {self.table_name!r} is {description.status}; waiting")
            self._closed.wait(poll_interval)
            description = self.check_table()
        if (
            self.ttl_attribute
            and description.ttl_status in {"DISABLED", "DISABLING"}
            and description.status == "ACTIVE"
        ):
            try:
                self.dynamodb.update_time_to_live(
                    TableName=self.table_name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": self.ttl_attribute},
                )
            except _BotoError as error:
                raise errors.translate(error, table_name=self.table_name) from error
            report(f"Enabled TTL on {self.ttl_attribute!r} (clean-up of old items only)")
            description = self.check_table()
        report(f"Table {self.table_name!r} is {description.status}")
        return description

    # ---------------------------------------------------------------- lifecycle

    def held_leases(self) -> list[Lease]:
        """The leases this client holds and renews now."""
        return self._held_leases()

    def _held_leases(self) -> list[Lease]:
        with self._mutex:
            return list(self._held.values())

    def close(self, *, release: bool = True) -> None:
        """Stop the heartbeat and release every held lease (unless ``release=False``)."""
        if self._closed.is_set():
            return
        self._closed.set()
        with self._released:
            self._released.notify_all()
        heartbeat = self._heartbeat
        if heartbeat is not None:
            heartbeat.stop(timeout=self.lease_duration)
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

    # ---------------------------------------------------------------- internals

    def _ensure_open(self) -> None:
        if self._closed.is_set():
            raise ClientClosed(f"{self!r} is closed; create a new LockClient.")

    def _wake_heartbeat(self) -> None:
        heartbeat = self._heartbeat
        if heartbeat is not None:
            heartbeat.wake()

    def _lock_id(self, key: str, sort_key: str | None) -> LockId:
        _check_key("key", key, item.MAX_PARTITION_KEY_BYTES)
        if self.sort_key_name is None:
            if sort_key is not None:
                raise InvalidLockRequest(
                    f"sort_key given, but the client has no sort_key_name; the table key is only {self.partition_key_name!r}."
                )
        else:
            if sort_key is None:
                raise InvalidLockRequest(f"This client's table has a sort key {self.sort_key_name!r}: pass sort_key=.")
            _check_key("sort_key", sort_key, item.MAX_SORT_KEY_BYTES)
        return (key, sort_key)

    def _key(self, lock_id: LockId) -> dict[str, Any]:
        key: dict[str, Any] = {self.partition_key_name: {"S": lock_id[0]}}
        if self.sort_key_name is not None:
            key[self.sort_key_name] = {"S": lock_id[1]}
        return key

    def _key_names(self) -> set[str]:
        return {self.partition_key_name} | ({self.sort_key_name} if self.sort_key_name else set())

    def _check_data(self, lock_id: LockId, data: bytes | None) -> None:
        if data is None:
            return
        if not isinstance(data, bytes | bytearray):
            raise InvalidLockRequest(f"data must be bytes or None, not {type(data).__name__}; encode it first.")
        largest = self._key(lock_id)
        largest.update(
            {
                item.OWNER_NAME: {"S": self.owner_name},
                item.LEASE_DURATION: {"S": str(int(self.lease_duration * 1000))},
                item.RECORD_VERSION_NUMBER: {"S": _new_version()},
                item.FENCING_TOKEN: {"N": "9" * 20},
                item.ACQUIRED_AT: {"N": "9" * 14},
                item.RENEWED_AT: {"N": "9" * 14},
                item.IS_RELEASED: {"S": item.IS_RELEASED_VALUE},
                item.RELEASED_BY: {"S": "x" * 256},
                item.DATA: {"B": bytes(data)},
            }
        )
        if self.ttl_attribute:
            largest[self.ttl_attribute] = {"N": "9" * 11}
        size = item.item_size(largest)
        if size > item.MAX_ITEM_BYTES:
            raise InvalidLockRequest(
                f"data is {len(data)} bytes, which makes the lock item about {size} bytes, over DynamoDB's "
                f"{item.MAX_ITEM_BYTES}-byte item limit. Store the payload elsewhere and put a reference in data."
            )

    def _holder_updates(
        self, exprs: Expressions, version: str, lease_duration: float, wall_ms: int, *, acquired: bool
    ) -> list[str]:
        """SET clauses every holder write makes: new version, lease, timestamps, TTL."""
        now = exprs.number(wall_ms)
        sets = [
            f"{exprs.name(item.RECORD_VERSION_NUMBER)} = {exprs.string(version)}",
            f"{exprs.name(item.LEASE_DURATION)} = {exprs.string(str(round(lease_duration * 1000)))}",
            f"{exprs.name(item.RENEWED_AT)} = {now}",
        ]
        if acquired:
            sets.append(f"{exprs.name(item.OWNER_NAME)} = {exprs.string(self.owner_name)}")
            sets.append(f"{exprs.name(item.ACQUIRED_AT)} = {now}")
        if self.ttl_attribute:
            sets.append(f"{exprs.name(self.ttl_attribute)} = {exprs.number(self._ttl_seconds(lease_duration))}")
        return sets

    def _version_clause(self, exprs: Expressions, raw_version: Any) -> str:
        """The item still carries exactly this stored version (or still has none)."""
        name = exprs.name(item.RECORD_VERSION_NUMBER)
        if raw_version is None:
            return f"attribute_not_exists({name})"
        return f"{name} = {exprs.value(raw_version)}"

    def _wall_ms(self) -> int:
        return int(self.clock.time() * 1000)

    def _ttl_seconds(self, lease_duration: float) -> int:
        # Clean-up only: DynamoDB deletes expired items up to days late, and a
        # holder keeps pushing this forward, so it never decides who holds a lock.
        return int(self.clock.time() + lease_duration + self.item_retention)


# ----------------------------------------------------------------------- helpers


def _new_version() -> str:
    return str(uuid.uuid4())


def _default_owner_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_key(label: str, key: object, max_bytes: int) -> None:
    if not isinstance(key, str):
        raise InvalidLockRequest(f"Lock {label} must be a string, not {type(key).__name__}.")
    if not key:
        raise InvalidLockRequest(f"Lock {label} must not be empty.")
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidLockRequest(
            f"Lock {label} is {size} bytes in UTF-8, over DynamoDB's {max_bytes}-byte limit; use a shorter key "
            "(for example a hash of it)."
        )


def _validate_durations(
    lease_duration: object, heartbeat_period: object, refresh_period: object, retention: object
) -> None:
    for label, value in (
        ("lease_duration", lease_duration),
        ("heartbeat_period", heartbeat_period),
        ("refresh_period", refresh_period),
        ("item_retention", retention),
    ):
        if not _is_number(value) or not value > 0:  # type: ignore[operator]
            raise ConfigurationError(f"{label} must be a positive number of seconds, not {value!r}.")
    assert isinstance(lease_duration, int | float) and isinstance(heartbeat_period, int | float)
    if lease_duration <= 2 * heartbeat_period:
        raise ConfigurationError(
            f"lease_duration ({lease_duration:g}s) must be more than twice heartbeat_period ({heartbeat_period:g}s), "
            f"so one failed renewal does not lose the lock: raise lease_duration above {2 * heartbeat_period:g}s "
            f"or lower heartbeat_period below {lease_duration / 2:g}s."
        )


def _describe_holder(holder: LockInfo | None) -> str:
    if holder is None:
        return "holder unknown"
    if holder.is_malformed:
        return f"held by an unreadable item ({'; '.join(holder.problems)})"
    return f"held by {holder.owner_name!r} (lease {holder.lease_duration:g}s, token {holder.fencing_token})"


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
