"""LockClient: the AWS DynamoDB Lock Client protocol over boto3's low-level client.

A façade: its construction, its life (close, fork) and its faces, one
per subject, each with its sync and awaitable verbs: one lock
(:mod:`.lock_methods`), groups (:mod:`.group_methods`), counted locks
(:mod:`.counted.client_methods`), listings, the queue of waiters and the
table. Each verb checks its options once into an :class:`.AcquireRequest`
(:mod:`.options`) and hands it to the wing that owns the work:
``acquiring/`` (the engine), ``leases/`` (what a holder keeps), ``aws/``
(the item I/O) and ``wire/`` (every request's parameters and conditions).
What each call costs in requests is in docs/protocol.md.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from . import fork_safety
from .aws import botocore_config, deadlines
from .aws.breaker import DEFAULT_COOL_DOWN, DEFAULT_THRESHOLD, CircuitBreaker
from .aws.connection import ClientFactory, Connection
from .aws.store import LockStore
from .clock import SYSTEM_CLOCK, Clock
from .counted.client_methods import CountedMethods
from .group_methods import GroupMethods
from .lease_methods import LeaseMethods
from .leases.heartbeat import DEFAULT_RENEWAL_WORKERS
from .leases.lease import Lease
from .listing import ListingMethods
from .lock_methods import LockMethods
from .options import CallChecks, check_client_options, check_renewal_workers, default_owner_name
from .process_state import ProcessState
from .queue_methods import QueueMethods
from .record_methods import RecordMethods
from .table_methods import TableMethods
from .wire import validation
from .wire.layout import TableLayout
from .wire.schema import validate_table_name

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class LockClient(
    LockMethods, GroupMethods, CountedMethods, TableMethods, ListingMethods, QueueMethods, RecordMethods, LeaseMethods
):
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
            owner=self,
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
