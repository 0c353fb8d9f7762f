"""What a client and each of its calls ask for, checked: every error names the problem and the fix.

Also the item-size budget: ``data`` must leave the largest item an acquire
can write under DynamoDB's 400 KB item limit.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

from .exceptions import ConfigurationError, InvalidLockRequest
from .telemetry import Described
from .wire import item, readers_mark, validation, waiters, writes

if TYPE_CHECKING:
    from .leases.lease import LostCallback
    from .wire.item import Item
    from .wire.layout import LockId, TableLayout


def check_client_options(
    lease_duration: object,
    heartbeat_period: object,
    refresh_period: object,
    owner_name: object,
    partition_key_name: object,
    sort_key_name: object,
    ttl_attribute: object,
    max_clock_skew: object,
) -> None:
    validation.check_durations(lease_duration, heartbeat_period, refresh_period=refresh_period)
    validation.check_clock_skew(max_clock_skew)
    validation.check_name("partition_key_name", partition_key_name)
    validation.check_name("owner_name", owner_name, optional=True)
    validation.check_name("sort_key_name", sort_key_name, optional=True)
    validation.check_name("ttl_attribute", ttl_attribute, optional=True)


MAX_RENEWAL_WORKERS = 64
"""The most renewal threads a client takes: more would only queue for botocore's connections (and cost memory)."""


def check_renewal_workers(renewal_workers: object) -> None:
    if (
        not isinstance(renewal_workers, int)
        or isinstance(renewal_workers, bool)
        or not 1 <= renewal_workers <= MAX_RENEWAL_WORKERS
    ):
        raise ConfigurationError(
            f"renewal_workers must be a whole number from 1 to {MAX_RENEWAL_WORKERS}, not {renewal_workers!r}: "
            "the threads renewing this client's leases side by side (8 by default; 1 renews them one after "
            "the other). Keep it within botocore's max_pool_connections (10 by default)."
        )


def default_owner_name() -> str:
    """Host name, process id and a random part: unique per client and process."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Owner(Protocol):
    """Whose name a client's writes carry (a LockClient): read at each use, as it changes (a forked child's, or set)."""

    owner_name: str


@dataclass(frozen=True)
class AcquireOptions:
    """What one acquire, try_acquire or take_over asks for, checked: every write it makes uses these."""

    owner_name: str
    lease_duration: float
    keep_alive: bool
    data: bytes | None
    on_lost: LostCallback | None
    # A permit of a counted lock: its set's count, written on the item and checked by the grant's condition.
    permits: int | None = None
    # How telemetry names the lock (its caller's words: the Django layer's kind and model); its lease keeps it.
    described: Described | None = None


class AcquireRequest(NamedTuple):
    """One acquiring call, checked once: its lock (or a group's locks), what its writes carry, how long it waits.

    Built by :meth:`CallChecks.request` from the call's options, then handed whole to the engine. A named
    tuple, not a frozen dataclass: one is made an acquire, and a frozen dataclass's fields cost four times
    as much to set.
    """

    lock_ids: tuple[LockId, ...]
    options: AcquireOptions
    timeout: float | None  # None: as long as it takes; 0: a try (never waits)
    many: bool  # a group (acquire_many), even of one key

    @property
    def lock_id(self) -> LockId:
        """The lock of a single acquire (or a counted lock's first permit)."""
        return self.lock_ids[0]


class CallChecks:
    """Each call's arguments, checked against the client's table layout and durations."""

    def __init__(self, layout: TableLayout, *, lease_duration: float, heartbeat_period: float, owner: Owner) -> None:
        self._layout = layout
        self._owner = owner  # the client, whose owner name a forked child renews
        self._lease_duration = lease_duration
        self._heartbeat_period = heartbeat_period
        # The options of a call that gives none of its own (most calls), for the owner name they were made
        # with: the same every time until the client's owner name changes (a forked child's, or set).
        self._usual: AcquireOptions | None = None

    def lock_id(self, key: str, sort_key: str | None) -> LockId:
        validation.check_key("key", key, item.MAX_PARTITION_KEY_BYTES)
        if self._layout.sort_key_name is None:
            if sort_key is not None:
                raise InvalidLockRequest(
                    "sort_key given, but this client has no sort_key_name: its table's key is "
                    f"{self._layout.partition_key_name!r} alone."
                )
        else:
            if sort_key is None:
                raise InvalidLockRequest(
                    f"This client's table has a sort key {self._layout.sort_key_name!r}: pass sort_key=."
                )
            validation.check_key("sort_key", sort_key, item.MAX_SORT_KEY_BYTES)
        return (key, sort_key)

    def request(
        self,
        lock_ids: LockId | list[LockId],
        timeout: float | None,
        owner_name: str | None = None,
        lease_duration: float | None = None,
        keep_alive: bool = True,
        data: bytes | None = None,
        on_lost: LostCallback | None = None,
        *,
        permits: int | None = None,
        described: Described | None = None,
    ) -> AcquireRequest:
        """The request of one acquiring call; ``lock_ids``: one lock id, or a group's (a list)."""
        if isinstance(lock_ids, list):
            many, ids = True, tuple(lock_ids)
            # The data budget depends on the key: check the longest.
            longest = max(ids, key=lambda id_: len(id_[0].encode()) + len((id_[1] or "").encode()))
        else:
            many, ids, longest = False, (lock_ids,), lock_ids
        if owner_name is None and lease_duration is None and keep_alive is True and data is None and on_lost is None:
            owner = self._owner.owner_name  # a call that gives no options of its own (most calls): the usual ones
            options = self._usual
            if options is None or options.owner_name != owner:
                options = self._usual = AcquireOptions(
                    owner_name=owner, lease_duration=self._lease_duration, keep_alive=True, data=None, on_lost=None
                )
        else:
            options = self._given_options(longest, owner_name, lease_duration, keep_alive, data, on_lost)
        if permits is not None or described is not None:
            options = dataclasses.replace(options, permits=permits, described=self.described(described))
        if timeout is not None:  # None, the usual wait, needs no look
            validation.check_timeout(timeout)
        return AcquireRequest(ids, options, timeout, many)

    def _given_options(
        self,
        lock_id: LockId,
        owner_name: str | None,
        lease_duration: float | None,
        keep_alive: bool,
        data: bytes | None,
        on_lost: LostCallback | None,
    ) -> AcquireOptions:
        validation.check_name("owner_name", owner_name, optional=True)
        options = AcquireOptions(
            owner_name=owner_name or self._owner.owner_name,
            lease_duration=self.lease_duration(lease_duration, keep_alive=keep_alive),
            keep_alive=keep_alive,
            data=data,
            on_lost=on_lost,
        )
        self._check_data(lock_id, options)
        return options

    @staticmethod
    def described(described: Described | None) -> Described | None:
        if described is not None and not isinstance(described, Described):
            raise InvalidLockRequest(
                f"described= takes a Described (its kind and model, for telemetry), not {type(described).__name__}: "
                'e.g. Described("object", model="desk.customer").'
            )
        return described

    def lease_duration(self, lease_duration: float | None, *, keep_alive: bool) -> float:
        """A lease's own duration, the client's by default.

        Only a lease the heartbeat renews needs room for a failed renewal in it.
        """
        if lease_duration is None:
            return self._lease_duration
        if keep_alive:
            validation.check_durations(lease_duration, self._heartbeat_period)
        else:
            validation.check_positive("lease_duration", lease_duration)
        return float(lease_duration)

    def _check_data(self, lock_id: LockId, options: AcquireOptions) -> None:
        if options.data is None:
            return
        # The largest item an acquire can leave, before its data.
        version = writes.new_version()
        largest: Item = {
            **self._layout.key(lock_id),
            item.OWNER_NAME: {"S": options.owner_name},
            item.LEASE_DURATION: {"S": str(round(options.lease_duration * 1000))},
            item.RECORD_VERSION_NUMBER: {"S": version},
            item.FENCING_TOKEN: {"N": "9" * 20},
            item.ACQUIRED_AT: {"N": "9" * 14},
            item.RENEWED_AT: {"N": "9" * 14},
            item.SENT_AT: writes.sent_at(version, int("9" * 14)),
            item.IS_RELEASED: {"S": item.IS_RELEASED_VALUE},
            item.RELEASED_BY: {"S": "x" * 256},
            item.LIVE_LOCK_KEY: {"S": lock_id[0]},
            item.PERMITS: {"N": "999"},
            readers_mark.READERS_MAY_HOLD: {"S": version},
            readers_mark.READERS_COUNT: {"N": "999"},
            waiters.WAITERS: waiters.largest_queue(),
        }
        if self._layout.ttl_attribute:
            largest[self._layout.ttl_attribute] = {"N": "9" * 11}
        validation.check_data(options.data, largest)
