"""LockClient: the AWS DynamoDB Lock Client protocol over boto3's low-level client.

A façade: each public method checks its arguments (:mod:`.options`) and
hands the work to the wing that owns it: ``acquiring/`` (deciding in
:mod:`.plan`, sending in :mod:`.acquirer`, an operator's actions in
:mod:`.operator_actions`), ``leases/`` (the writes to a granted lease,
:mod:`.lease_writes`), ``aws/`` (the item I/O, :mod:`.store`) and ``wire/``
(every request's parameters, :mod:`.writes`, and conditions,
:mod:`.conditions`). Its faces beside it add the groups, the awaitable
methods, listings, the queue of waiters and the table. What each call costs
in requests is in docs/protocol.md.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from . import fork_safety
from .async_methods import AsyncMethods
from .aws import botocore_config, deadlines
from .aws.breaker import DEFAULT_COOL_DOWN, DEFAULT_THRESHOLD, CircuitBreaker
from .aws.connection import ClientFactory, Connection
from .aws.store import LockStore
from .clock import SYSTEM_CLOCK, Clock, Instant
from .counted.client_methods import CountedMethods
from .group_methods import GroupMethods
from .leases.heartbeat import DEFAULT_RENEWAL_WORKERS
from .leases.lease import Lease, LostCallback, detached_handle
from .listing import ListingMethods
from .options import CallChecks, check_client_options, check_renewal_workers, default_owner_name
from .process_state import ProcessState
from .queue_methods import QueueMethods
from .table_methods import TableMethods
from .wire import validation
from .wire.item import LockInfo
from .wire.layout import TableLayout
from .wire.schema import validate_table_name

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class LockClient(AsyncMethods, GroupMethods, CountedMethods, TableMethods, ListingMethods, QueueMethods):
    """Advisory locks in a DynamoDB table, compatible with the AWS Java lock client.

    ``dynamodb`` is a boto3 DynamoDB client, or a zero-argument callable that makes one. Prefer the
    callable in servers that fork (gunicorn --preload): a forked child calls it to get its own
    connections. Given a client instance, a child builds a new client with the same region, endpoint
    and config, and credentials from boto3's default chain.

    One client runs one heartbeat thread for all its leases, and ``renewal_workers`` threads renewing
    them side by side (see docs/protocol.md, "Holding many locks"). It is safe to share between
    threads; a process normally needs just one. ``max_clock_skew``: see :meth:`acquire` and docs/guarantees.md.

    Every call works to a deadline, and after ``breaker_threshold`` calls in a row without an answer
    from DynamoDB, calls fail at once (CircuitOpen) for ``breaker_cool_down`` seconds: see
    docs/operations.md.
    """

    def __init__(
        self,
        dynamodb: DynamoDBClient | ClientFactory,
        table_name: str,
        *,
        lease_duration: float = 20.0,
        heartbeat_period: float = 5.0,
        refresh_period: float = 1.0,
        renewal_workers: int = DEFAULT_RENEWAL_WORKERS,
        owner_name: str | None = None,
        partition_key_name: str = "key",
        sort_key_name: str | None = None,
        delete_on_release: bool = False,
        ttl_attribute: str | None = "ttl",
        max_clock_skew: float | None = None,
        breaker_threshold: int | None = DEFAULT_THRESHOLD,
        breaker_cool_down: float = DEFAULT_COOL_DOWN,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        check_client_options(
            lease_duration,
            heartbeat_period,
            refresh_period,
            owner_name,
            partition_key_name,
            sort_key_name,
            ttl_attribute,
            max_clock_skew,
        )
        validation.check_breaker(breaker_threshold, breaker_cool_down)
        check_renewal_workers(renewal_workers)
        self.layout = TableLayout(validate_table_name(table_name), partition_key_name, sort_key_name, ttl_attribute)
        self.lease_duration = float(lease_duration)
        self.heartbeat_period = float(heartbeat_period)
        self.refresh_period = float(refresh_period)
        self.renewal_workers = renewal_workers
        self.delete_on_release = delete_on_release
        self.max_clock_skew = None if max_clock_skew is None else float(max_clock_skew)
        self.clock = clock
        self._owner_name_given = owner_name is not None
        self.owner_name = owner_name or default_owner_name()
        self.call_checks = CallChecks(
            self.layout,
            lease_duration=self.lease_duration,
            heartbeat_period=self.heartbeat_period,
            owner_name=lambda: self.owner_name,
        )
        self._connection = Connection(dynamodb, on_new_client=self._check_retry_budget)
        self.breaker = CircuitBreaker(clock, threshold=breaker_threshold, cool_down=float(breaker_cool_down))
        self.store = LockStore(self._connection, self.layout, self.breaker)
        self.process_state = ProcessState(self, self.store, closed=False)
        fork_safety.reset_in_forked_child(self, LockClient._after_fork_in_child)

    @property
    def table_name(self) -> str:
        return self.layout.table_name

    def __repr__(self) -> str:
        return (
            f"<LockClient table={self.table_name!r} owner={self.owner_name!r} held={len(self.process_state.holdings)}>"
        )

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
        reentrant: bool = False,
    ) -> Lease:
        """Wait until the lock is ours and return its lease.

        ``timeout`` is in seconds (None waits as long as it takes); when it runs out, LockTimeout
        says who holds the lock. A lock whose holder stopped renewing is taken over once its record
        version number has stood unchanged for the item's lease duration on our clock, or, with
        ``max_clock_skew`` (a bound on how far any two clients' wall clocks differ), at once if its
        last write is older than its lease plus that.

        ``owner_name`` and ``lease_duration`` replace the client's for this lock. With ``keep_alive=False`` the
        lease is detached: its owner renews and releases it from elsewhere through :meth:`lease`; this client
        neither renews it nor releases it on close, and its threads do not wait for it locally. Asked by its
        holder: WouldDeadlock, or with ``reentrant`` a lease on the hold, at no request (docs/protocol.md).
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        options = self.call_checks.acquire_options(lock_id, owner_name, lease_duration, keep_alive, data, on_lost)
        validation.check_timeout(timeout)
        return self.process_state.acquire(lock_id, options, timeout, reentrant=reentrant)

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
        reentrant: bool = False,
    ) -> Lease | None:
        """One attempt, never waiting: the lease, or None when someone holds the lock.

        Repeated calls (and :meth:`get`) remember what they saw, so a lock whose holder died is
        taken over by the first call the takeover rule allows (see :meth:`acquire`). Raises
        DynamoDBUnavailable when DynamoDB cannot answer. Options: :meth:`acquire`'s (None for its WouldDeadlock).
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        options = self.call_checks.acquire_options(lock_id, owner_name, lease_duration, keep_alive, data, on_lost)
        self.process_state.ensure_open()
        return self.process_state.try_acquire(lock_id, options, reentrant=reentrant)

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

        If the block succeeds but the lease was lost meanwhile, LockLost is raised at the end: the
        block was not protected for all of its run.
        """
        with self.acquire(key, sort_key=sort_key, timeout=timeout, data=data, on_lost=on_lost) as lease:
            yield lease

    def extend(self, lease: Lease, lease_duration: float | None = None) -> None:
        """Renew ``lease`` now, optionally changing its lease duration; LockLost if it is gone.

        A detached lease (``keep_alive=False``) is renewed even when this
        object believes it ran out: its owner may renew late, and the write's
        condition (owner and fencing token) decides whether it still holds it.
        """
        if lease_duration is not None:
            lease_duration = self.call_checks.lease_duration(lease_duration, keep_alive=lease.keep_alive)
        self.process_state.lease_writer.renew(lease, lease_duration)
        self.process_state.heartbeat.wake()

    def release(self, lease: Lease, *, best_effort: bool = False) -> bool:
        """Release ``lease``; True when this call released it.

        Raises LockLost when the lock is no longer ours (taken over, or
        released by someone else): our release never changes another
        holder's lock. A lease whose safe time ran out is still released if
        nobody took it meanwhile. With ``best_effort=True``, LockLost and
        DynamoDB errors are logged and give False. Releasing twice is a no-op,
        and so is releasing a holding its owner released already (through
        another handle on a detached lease), or a reentrant hold's lease but its last: False.
        """
        return self.process_state.release(lease, best_effort=best_effort)

    def force_release(self, lock: LockInfo, *, released_by: str) -> LockInfo:
        """Release someone else's lock (an operator's action), and return it as released.

        Conditioned on the holding in ``lock``, as read by the operator (its
        owner and fencing token; heartbeats in between do not matter): if the
        lock changed hands or was released since, LockNotAcquired is raised and
        nothing changes. ``released_by`` is stored so the holder learns who did it.
        """
        self.call_checks.lock_id(lock.key, lock.sort_key)
        return self.process_state.operator.force_release(lock, released_by=released_by)

    def take_over(
        self,
        lock: LockInfo,
        *,
        data: bytes | None = None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
        on_lost: LostCallback | None = None,
        dequeue: Sequence[str] = (),
        unchanged: bool = False,
    ) -> Lease:
        """Take someone else's lock now (an operator's or a user's action), and return our lease.

        One conditional write, granted only if the lock is still the holding
        in ``lock`` as read (owner and fencing token, as :meth:`force_release`
        checks): it issues the next fencing token. If the lock changed hands
        or was released since, LockNotAcquired is raised and nothing changes.
        The previous holder finds out at its next renewal. ``dequeue``: waiters of
        ``lock.waiters`` the same write takes out of the queue (the taker, those
        gone). ``unchanged``: only if the item is still exactly as read (its record version), not
        merely the same holding: for handing a lock that looked free or expired to the next in
        line, never from a holder that has renewed since. The other options are :meth:`acquire`'s.
        """
        lock_id = self.call_checks.lock_id(lock.key, lock.sort_key)
        options = self.call_checks.acquire_options(lock_id, owner_name, lease_duration, keep_alive, data, on_lost)
        self.process_state.ensure_open()
        return self.process_state.operator.take_over(lock, options, dequeue=list(dequeue), unchanged=unchanged)

    def get(self, key: str, *, sort_key: str | None = None) -> LockInfo | None:
        """The lock item as stored now (a consistent read), or None if there is none.

        Like a refused acquire, it remembers the holder's version and when it was first seen, so
        :meth:`available_in` can tell when this client may take over a holder that stopped renewing.
        """
        lock_id = self.call_checks.lock_id(key, sort_key)
        info = self.store.read(lock_id)
        if info is not None:
            self.process_state.observations.saw(lock_id, info, Instant.read(self.clock))
        return info

    def available_in(self, lock: LockInfo | None) -> float:
        """Seconds until this client may take ``lock`` (as read by :meth:`get`); no request.

        0 when there is no item, it is released, or its version has stood for the item's lease
        since this client first saw it; the whole lease when this client has not seen this version
        before; with ``max_clock_skew``, also 0 once the holder's last write is older than its
        lease plus that.
        """
        return self.process_state.observations.takeover_in(lock, Instant.read(self.clock))

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
        lock_id = self.call_checks.lock_id(key, sort_key)
        validation.check_name("owner_name", owner_name)
        validation.check_fencing_token(fencing_token)
        duration = self.call_checks.lease_duration(lease_duration, keep_alive=False)
        return detached_handle(
            self, self.clock, lock_id, owner_name=owner_name, fencing_token=fencing_token, lease_duration=duration
        )

    @property
    def dynamodb(self) -> DynamoDBClient:
        """The boto3 client this process uses (built on first use from a factory)."""
        return self._connection.client

    def held_leases(self) -> list[Lease]:
        """The leases this client holds and renews now."""
        return self.process_state.holdings.leases()

    def close(self, *, release: bool = True) -> None:
        """Stop the heartbeat and release every held lease (unless ``release=False``)."""
        if self.process_state.close(release=release, heartbeat_timeout=self.lease_duration):
            self._connection.close()
            fork_safety.forget(self)

    def __enter__(self) -> LockClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _after_fork_in_child(self) -> None:
        # The parent's leases, heartbeat thread and connections stay the
        # parent's: the child starts empty, under a new owner name.
        self._connection.after_fork_in_child()
        self.breaker.after_fork_in_child()
        if not self._owner_name_given:
            self.owner_name = default_owner_name()
        self.process_state = ProcessState(self, self.store, closed=self.process_state.closed.is_set())

    def _closed_event(self) -> threading.Event:
        return self.process_state.closed

    def _check_retry_budget(self, dynamodb: DynamoDBClient) -> None:
        deadlines.install(dynamodb)
        botocore_config.warn_if_too_slow(
            dynamodb.meta.config, lease_duration=self.lease_duration, heartbeat_period=self.heartbeat_period
        )
