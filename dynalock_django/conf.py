"""The ``DYNALOCK`` settings dict, read on every access so ``override_settings`` works.

Validation lives in :mod:`dynalock_django.checks`; the properties here only
fill in defaults, so a bad value surfaces as a system check with a hint.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings

# The longest a change page's script can time (EDIT_LEASE_DURATION, EDIT_IDLE_TIMEOUT): a browser's
# setTimeout fires at once for a delay past 2**31 - 1 ms (about 24.8 days); 24 days stays inside it.
MAX_PAGE_SECONDS = 24 * 24 * 3600.0

DEFAULTS: dict[str, Any] = {
    "TABLE_NAME": "dynalock",
    "ENDPOINT_URL": None,
    "REGION_NAME": None,
    "LEASE_DURATION": 20.0,
    "HEARTBEAT_PERIOD": 5.0,
    "REFRESH_PERIOD": 1.0,
    # Threads renewing the process's leases side by side; 1 renews them one after the other.
    "RENEWAL_WORKERS": 8,
    "OWNER_NAME": None,
    # None: a crashed holder's lock is taken a lease after a waiter first sees it (no clock compared).
    # Seconds: the most any two hosts' wall clocks differ by; such a lock is then taken at once once its
    # holder's last write is older than its lease plus this (docs/guarantees.md).
    "MAX_CLOCK_SKEW": None,
    # One DynamoDB call, retries included, must fit well inside a lease (see docs/django/settings.md).
    "BOTO_CONFIG": {
        "connect_timeout": 1,
        "read_timeout": 2,
        "retries": {"mode": "standard", "total_max_attempts": 3},
    },
    "KEY_PREFIX": "",
    # Put between KEY_PREFIX and every key: "auto" (django-tenants' schema when it is installed), None, or a
    # dotted path to a callable of no argument returning the scope (key_scope.py).
    "KEY_SCOPE": "auto",
    "CONTENTION_STATUS": 423,
    "DELETE_ON_RELEASE": False,
    # Models ("app_label.ModelName") whose rows are read shared (lock_object(row, shared=True)): only their
    # rows' writers look for readers; every other row's lock is two requests with its release.
    "SHARED_LOCK_MODELS": [],
    # Edit locks of admin change pages, renewed by the browser tab every third of it. Long enough
    # for a hidden tab, whose timers the browser may slow to one a minute, to keep its lock.
    "EDIT_LEASE_DURATION": 60.0,
    # A change page with no input (keys, pointer, scroll, focus) for this long lets its lock go; None: never.
    "EDIT_IDLE_TIMEOUT": 900.0,
    # The admin shows and force-releases only keys under KEY_PREFIX; True shows every key in the table.
    "ADMIN_SHOWS_ALL_KEYS": False,
    # @requires_lock's contention response names the holder to anonymous requests too.
    "SHOW_HOLDER_TO_ANONYMOUS": False,
    # Calls in a row without an answer from DynamoDB after which calls fail at once (None: never), and for how long.
    "BREAKER_THRESHOLD": 3,
    "BREAKER_COOL_DOWN": 5.0,
    # OpenTelemetry spans name the lock's key (a row's primary key, a task's arguments); metrics never do.
    "TRACE_KEYS": False,
    # While DynamoDB does not answer, the admin's change pages are read-only; True lets staff edit without edit
    # locks (each save logged), their saves still refused by a row's fence if a newer lease wrote it since the
    # page was opened (admin/edit_locking/outage_saves.py). Models without a FencingTokenField: the later save wins.
    "EDIT_DURING_OUTAGE": False,
    # The Celery beat scheduler dynalock_django.celery.LeaderScheduler wraps (a dotted path).
    "BEAT_SCHEDULER": "celery.beat:PersistentScheduler",
}


class DynalockSettings:
    """Typed access to ``settings.DYNALOCK``, with defaults."""

    def _get(self, name: str) -> Any:
        configured = getattr(settings, "DYNALOCK", None) or {}
        if isinstance(configured, dict) and name in configured:
            return configured[name]
        return DEFAULTS[name]

    @property
    def TABLE_NAME(self) -> str:
        return str(self._get("TABLE_NAME"))

    @property
    def ENDPOINT_URL(self) -> str | None:
        value = self._get("ENDPOINT_URL")
        return str(value) if value else None

    @property
    def REGION_NAME(self) -> str | None:
        value = self._get("REGION_NAME")
        return str(value) if value else None

    @property
    def LEASE_DURATION(self) -> float:
        return float(self._get("LEASE_DURATION"))

    @property
    def HEARTBEAT_PERIOD(self) -> float:
        return float(self._get("HEARTBEAT_PERIOD"))

    @property
    def REFRESH_PERIOD(self) -> float:
        return float(self._get("REFRESH_PERIOD"))

    @property
    def RENEWAL_WORKERS(self) -> int:
        return int(self._get("RENEWAL_WORKERS"))

    @property
    def OWNER_NAME(self) -> str | None:
        value = self._get("OWNER_NAME")
        return str(value) if value else None

    @property
    def MAX_CLOCK_SKEW(self) -> float | None:
        value = self._get("MAX_CLOCK_SKEW")
        return None if value is None else float(value)

    @property
    def BOTO_CONFIG(self) -> dict[str, Any]:
        return dict(self._get("BOTO_CONFIG"))

    @property
    def KEY_PREFIX(self) -> str:
        return str(self._get("KEY_PREFIX"))

    @property
    def KEY_SCOPE(self) -> str | None:
        value = self._get("KEY_SCOPE")
        return None if value is None else str(value)

    @property
    def CONTENTION_STATUS(self) -> int:
        return int(self._get("CONTENTION_STATUS"))

    @property
    def DELETE_ON_RELEASE(self) -> bool:
        return bool(self._get("DELETE_ON_RELEASE"))

    @property
    def SHARED_LOCK_MODELS(self) -> tuple[str, ...]:
        """The labels as given, strings only (check E031 names the rest)."""
        value = self._get("SHARED_LOCK_MODELS")
        return tuple(label for label in value if isinstance(label, str)) if isinstance(value, list | tuple) else ()

    @property
    def EDIT_LEASE_DURATION(self) -> float:
        """At most :data:`MAX_PAGE_SECONDS`, whatever is set (check E014 says so): a page's script times it."""
        value = float(self._get("EDIT_LEASE_DURATION"))
        return float(DEFAULTS["EDIT_LEASE_DURATION"]) if math.isnan(value) else min(value, MAX_PAGE_SECONDS)

    @property
    def EDIT_IDLE_TIMEOUT(self) -> float | None:
        """At most :data:`MAX_PAGE_SECONDS` (check E018); an endless one (inf, NaN) is None, never idle."""
        value = self._get("EDIT_IDLE_TIMEOUT")
        if value is None or not math.isfinite(float(value)):
            return None
        return min(float(value), MAX_PAGE_SECONDS)

    @property
    def BEAT_SCHEDULER(self) -> str:
        return str(self._get("BEAT_SCHEDULER"))

    @property
    def ADMIN_SHOWS_ALL_KEYS(self) -> bool:
        return bool(self._get("ADMIN_SHOWS_ALL_KEYS"))

    @property
    def SHOW_HOLDER_TO_ANONYMOUS(self) -> bool:
        return bool(self._get("SHOW_HOLDER_TO_ANONYMOUS"))

    @property
    def BREAKER_THRESHOLD(self) -> int | None:
        value = self._get("BREAKER_THRESHOLD")
        return None if value is None else int(value)

    @property
    def BREAKER_COOL_DOWN(self) -> float:
        return float(self._get("BREAKER_COOL_DOWN"))

    @property
    def TRACE_KEYS(self) -> bool:
        return bool(self._get("TRACE_KEYS"))

    @property
    def EDIT_DURING_OUTAGE(self) -> bool:
        return bool(self._get("EDIT_DURING_OUTAGE"))


dynalock_settings = DynalockSettings()
