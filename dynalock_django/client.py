"""The one LockClient of this process, built lazily from settings (or the one a test put in its place).

Thread-safe; the LockClient itself survives fork (the child gets a new boto3
client and holds none of the parent's leases). It is rebuilt when the
``DYNALOCK`` setting changes (tests) and closed at interpreter exit, which
releases what it still holds.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from .conf import dynalock_settings
from .dynamodb import Clock, LockClient, build_dynamodb_client

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_lock = threading.Lock()
_client: LockClient | None = None
_stand_in: LockClient | None = None  # a test's (dynalock_django.testing.locks_in_memory)


def get_dynamodb() -> DynamoDBClient:
    """A new boto3 DynamoDB client from settings; credentials come from boto3's normal chain."""
    return build_dynamodb_client(
        region_name=dynalock_settings.REGION_NAME,
        endpoint_url=dynalock_settings.ENDPOINT_URL,
        config=dynalock_settings.BOTO_CONFIG,
    )


def get_client() -> LockClient:
    """The process's LockClient (built on first use)."""
    global _client
    client = _stand_in or _client
    if client is not None:
        return client
    with _lock:
        if _client is None:
            _client = build_client(get_dynamodb)
        return _client


def wall_now() -> datetime:
    """Now by the lock client's wall clock: what pages and the command compare the items' timestamps with.

    The machine's clock in production; under ``locks_in_memory()`` the virtual clock that stamped
    the items, so a test reads what production shows (a live lock as live, its ``Retry-After``).
    """
    return datetime.fromtimestamp(get_client().clock.time(), UTC)


def build_client(
    dynamodb: DynamoDBClient | Callable[[], DynamoDBClient], *, clock: Clock | None = None, **options: Any
) -> LockClient:
    """A LockClient configured from settings, on ``dynamodb``; ``options`` override LockClient arguments."""
    arguments: dict[str, Any] = {
        "lease_duration": dynalock_settings.LEASE_DURATION,
        "heartbeat_period": dynalock_settings.HEARTBEAT_PERIOD,
        "refresh_period": dynalock_settings.REFRESH_PERIOD,
        "renewal_workers": dynalock_settings.RENEWAL_WORKERS,
        "owner_name": dynalock_settings.OWNER_NAME,
        "delete_on_release": dynalock_settings.DELETE_ON_RELEASE,
        "max_clock_skew": dynalock_settings.MAX_CLOCK_SKEW,
        "breaker_threshold": dynalock_settings.BREAKER_THRESHOLD,
        "breaker_cool_down": dynalock_settings.BREAKER_COOL_DOWN,
    }
    if clock is not None:
        arguments["clock"] = clock
    return LockClient(dynamodb, dynalock_settings.TABLE_NAME, **{**arguments, **options})


@contextlib.contextmanager
def client_replaced_by(client: LockClient) -> Iterator[LockClient]:
    """While the block runs, get_client() returns ``client`` (a test's, on another store and clock)."""
    global _stand_in
    with _lock:
        before, _stand_in = _stand_in, client
    try:
        yield client
    finally:
        with _lock:
            _stand_in = before


def close_client(*, release: bool = True) -> None:
    """Close the process's client (releasing its leases); the next get_client() builds a new one."""
    global _client
    with _lock:
        client, _client = _client, None
    if client is not None:
        client.close(release=release)


@receiver(setting_changed)
def _rebuild_on_settings_change(*, setting: str, **_: Any) -> None:
    if setting == "DYNALOCK":
        close_client()


atexit.register(close_client)
