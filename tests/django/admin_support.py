"""Browsers and table access shared by the admin's tests (users come from conftest's ``make_staff``)."""

from __future__ import annotations

import functools
import time
from typing import Any

from django.test import Client

from dynalock_django.client import get_client
from dynalock_django.conf import dynalock_settings
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from ..dynamodb_support import make_dynamodb

LIVE_LOCKS = "/admin/dynalock_django/lock/"
RELEASE = "/admin/dynalock_django/lock/release/"
# What the support desk's editors may do: everything with customers, their addresses and notes.
DESK_EDITOR = tuple(
    f"{action}_{model}" for model in ("customer", "address", "note") for action in ("view", "change", "add", "delete")
)
# Long leases, no heartbeat within a test, patient reads: for request counts, and for moto, which takes
# seconds over a transaction of 100 writes (far longer than the suite's half-second read timeout).
PATIENT = {
    "LEASE_DURATION": 60.0,
    "HEARTBEAT_PERIOD": 20.0,
    "BOTO_CONFIG": {"connect_timeout": 1, "read_timeout": 10, "retries": {"total_max_attempts": 1}},
}
# An unmasked CSRF secret: the form field may carry the cookie's value as it is.
CSRF_TOKEN = "a" * 32


def logged_in(user: Any, **options: Any) -> Client:
    """A test client logged in as ``user`` (CSRF unchecked unless ``enforce_csrf_checks=True``)."""
    client = Client(**options)
    client.force_login(user)
    return client


def browser(user: Any = None, **options: Any) -> Client:
    """A client that enforces CSRF like a real browser session would, logged in as ``user`` if given."""
    client = Client(enforce_csrf_checks=True, **options)
    client.cookies["csrftoken"] = CSRF_TOKEN
    if user is not None:
        client.force_login(user)
    return client


def with_token(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "csrfmiddlewaretoken": CSRF_TOKEN}


def put_item(item: dict[str, Any], *, live: bool = True) -> None:
    """Write a raw item into the lock table, as someone else (or an attacker) could.

    ``live``: with the live-locks index's key (``liveLockKey``), as our clients mark a held lock and as
    an attacker could, so the default live-locks page lists it; without, as the AWS Java client writes.
    """
    marked = {"liveLockKey": item["key"], **item} if live and "S" in item.get("key", {}) else item
    get_client().dynamodb.put_item(TableName=dynalock_settings.TABLE_NAME, Item=marked)


def held_by(owner: str, key: str, token: str = "7") -> Any:
    """An item held by ``owner`` for an hour, written as another client would; returns it as read (a LockInfo)."""
    put_item(
        {
            "key": {"S": key},
            "ownerName": {"S": owner},
            "leaseDuration": {"S": "3600000"},
            "recordVersionNumber": {"S": f"rvn-{owner}"},
            "fencingToken": {"N": token},
        }
    )
    return get_client().get(key)


def held_by_user(key: str, username: str, minutes_ago: int, *, user_id: str = "99", purpose: str = "edit") -> None:
    """A lock held for an hour by ``username`` since ``minutes_ago``, renewed just now, as another server wrote it."""
    now_ms = int(time.time() * 1000)
    tab = "t" * 22
    data = LockData(purpose=purpose, user_id=user_id, username=username, tab=tab).to_bytes()
    put_item(
        {
            "key": {"S": key},
            "ownerName": {"S": f"django-user:{user_id}/tab:{tab}"},
            "leaseDuration": {"S": "3600000"},
            "recordVersionNumber": {"S": "rvn"},
            "fencingToken": {"N": "3"},
            "data": {"B": data},
            "acquiredAt": {"N": str(now_ms - minutes_ago * 60_000)},
            "renewedAt": {"N": str(now_ms - 1_000)},
        }
    )


@functools.cache
def observer(endpoint_url: str) -> Any:
    """One patient boto3 client per endpoint for reading what the tests observe (a new one costs 0.3 s)."""
    return make_dynamodb(endpoint_url, read_timeout=10)


def table_items() -> list[dict[str, Any]]:
    """Every item of the lock table, as stored (read patiently: the test observes, it is not under test)."""
    dynamodb, items, start = observer(dynalock_settings.ENDPOINT_URL), [], None
    while True:
        page = dynamodb.scan(
            TableName=dynalock_settings.TABLE_NAME,
            ConsistentRead=True,
            **({"ExclusiveStartKey": start} if start else {}),
        )
        items += page["Items"]
        start = page.get("LastEvaluatedKey")
        if not start:
            dynamodb.close()
            return sorted(items, key=lambda item: str(item.get("key")))


def release_form(holder: Any) -> dict[str, Any]:
    """What the release confirmation posts for the holding ``holder`` (a LockInfo)."""
    token = "" if holder.fencing_token is None else str(holder.fencing_token)
    return with_token({"key": holder.key, "owner": holder.owner_name or "", "fencing_token": token})


def held(obj: Any) -> bool:
    """``obj``'s lock is held by someone now, as the table says."""
    stored = get_client().get(key_for_instance(obj))
    return stored is not None and not stored.is_released
