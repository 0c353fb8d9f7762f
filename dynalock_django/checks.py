"""System checks of ``settings.DYNALOCK``; table checks only under ``check --deploy``.

Settings checks never touch the network. The deploy check calls DescribeTable
and DescribeTimeToLive once.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any
from urllib.parse import urlparse

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .conf import DEFAULTS, MAX_PAGE_SECONDS
from .dynamodb import (
    MAX_RENEWAL_WORKERS,
    RECOMMENDED_CONFIG,
    ConfigurationError,
    DynamoDBError,
    TableNotFound,
    retry_budget_seconds,
    validate_table_name,
)
from .key_scope import check_key_scope

TAG = "dynalock"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@register(TAG)
def check_settings(app_configs: Any = None, **_: Any) -> list[CheckMessage]:
    configured = getattr(settings, "DYNALOCK", {})
    if not isinstance(configured, dict):
        return [
            Error(
                f"DYNALOCK must be a dict, not {type(configured).__name__}.",
                hint='Set DYNALOCK = {"TABLE_NAME": "locks", ...} in your settings.',
                id="dynalock.E001",
            )
        ]
    values = {**DEFAULTS, **configured}
    messages: list[CheckMessage] = [*_unknown_keys(configured)]
    messages += _table_name(values["TABLE_NAME"])
    messages += _durations(values)
    messages += _clock_skew(values["MAX_CLOCK_SKEW"])
    messages += _renewal_workers(values["RENEWAL_WORKERS"])
    messages += _boto_config(values)
    messages += _simple_types(values)
    messages += _outage(values)
    messages += _shared_lock_models(values["SHARED_LOCK_MODELS"])
    messages += check_key_scope(values["KEY_SCOPE"], explicit="KEY_SCOPE" in configured)
    return messages


def _shared_lock_models(declared: Any) -> list[CheckMessage]:
    """Every entry names an installed model: a typo would leave its rows' writers blind to their readers."""
    hint = (
        'List model labels, as DYNALOCK["SHARED_LOCK_MODELS"] = ["shop.Order"]: the models whose rows are read shared.'
    )
    if not isinstance(declared, list | tuple):
        return [
            Error(f"DYNALOCK['SHARED_LOCK_MODELS'] must be a list, not {declared!r}.", hint=hint, id="dynalock.E031")
        ]
    messages: list[CheckMessage] = []
    for label in declared:
        try:
            apps.get_model(label)
        except (LookupError, ValueError, TypeError, AttributeError):
            messages.append(
                Error(
                    f"DYNALOCK['SHARED_LOCK_MODELS'] names {label!r}, which is not an installed model.",
                    hint=hint,
                    id="dynalock.E031",
                )
            )
    return messages


def _outage(values: dict[str, Any]) -> list[CheckMessage]:
    """The circuit breaker's settings, and whether the admin edits during an outage."""
    messages: list[CheckMessage] = []
    threshold, cool_down = values["BREAKER_THRESHOLD"], values["BREAKER_COOL_DOWN"]
    threshold_ok = threshold is None or (
        isinstance(threshold, int) and not isinstance(threshold, bool) and threshold > 0
    )
    if not threshold_ok or not (_is_number(cool_down) and 0 < cool_down < math.inf):
        messages.append(
            Error(
                "DYNALOCK['BREAKER_THRESHOLD'] must be a positive integer or None, and BREAKER_COOL_DOWN a positive "
                f"number of seconds; not {threshold!r} and {cool_down!r}.",
                hint="The defaults: 3 calls without an answer in a row, then 5.0 s of failing at once.",
                id="dynalock.E019",
            )
        )
    editing = values["EDIT_DURING_OUTAGE"]
    if not isinstance(editing, bool):
        messages.append(
            Error(
                "DYNALOCK['EDIT_DURING_OUTAGE'] must be True or False.",
                hint="The default is False.",
                id="dynalock.E029",
            )
        )
    elif editing:
        messages.append(
            Warning(
                "DYNALOCK['EDIT_DURING_OUTAGE'] is on: while DynamoDB does not answer, staff edit in the admin without "
                "edit locks, so two people may edit one object at once and the later save overwrites the earlier.",
                hint="Keep the default (False): change pages are read-only until the lock service answers again. "
                "Each save made without a lock is logged (logger dynalock_django.admin).",
                id="dynalock.W005",
            )
        )
    return messages


def _unknown_keys(configured: dict[str, Any]) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for name in sorted(set(configured) - set(DEFAULTS)):
        close = difflib.get_close_matches(name, DEFAULTS, n=1)
        hint = f"Did you mean {close[0]!r}?" if close else f"Known keys: {', '.join(sorted(DEFAULTS))}."
        messages.append(Error(f"DYNALOCK has an unknown key {name!r}.", hint=hint, id="dynalock.E002"))
    return messages


def _table_name(name: Any) -> list[CheckMessage]:
    try:
        validate_table_name(name)
    except ConfigurationError as error:
        return [Error(f"DYNALOCK['TABLE_NAME']: {error}", hint="Use a valid DynamoDB table name.", id="dynalock.E003")]
    return []


def _durations(values: dict[str, Any]) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for name, check_id in (
        ("LEASE_DURATION", "E004"),
        ("HEARTBEAT_PERIOD", "E005"),
        ("REFRESH_PERIOD", "E007"),
    ):
        if not _is_number(values[name]) or not values[name] > 0:
            messages.append(
                Error(
                    f"DYNALOCK['{name}'] must be a positive number of seconds, not {values[name]!r}.",
                    hint=f"The default is {DEFAULTS[name]!r}.",
                    id=f"dynalock.{check_id}",
                )
            )
    messages += _page_durations(values)
    if messages:
        return messages
    lease, period = float(values["LEASE_DURATION"]), float(values["HEARTBEAT_PERIOD"])
    if lease <= 2 * period:
        messages.append(
            Error(
                f"DYNALOCK['LEASE_DURATION'] ({lease:g}s) must be more than twice HEARTBEAT_PERIOD ({period:g}s): "
                "one failed renewal would lose every lock.",
                hint=f"Raise LEASE_DURATION above {2 * period:g} or lower HEARTBEAT_PERIOD below {lease / 2:g} "
                "(recommended: a lease of 4 heartbeat periods).",
                id="dynalock.E006",
            )
        )
    return messages


def _page_durations(values: dict[str, Any]) -> list[CheckMessage]:
    """The durations a change page's script times (E014, E018): no longer than a browser's timer can wait."""
    messages: list[CheckMessage] = []
    limit = f"at most {MAX_PAGE_SECONDS:g} (24 days: a browser's timer fires at once past about 24.8)"
    lease = values["EDIT_LEASE_DURATION"]
    if not _is_number(lease) or not 0 < lease <= MAX_PAGE_SECONDS:
        messages.append(
            Error(
                f"DYNALOCK['EDIT_LEASE_DURATION'] must be a positive number of seconds, {limit}; not {lease!r}.",
                hint=f"The default is {DEFAULTS['EDIT_LEASE_DURATION']!r}.",
                id="dynalock.E014",
            )
        )
    idle = values["EDIT_IDLE_TIMEOUT"]
    if idle is not None and (not _is_number(idle) or not 0 < idle <= MAX_PAGE_SECONDS):
        messages.append(
            Error(
                f"DYNALOCK['EDIT_IDLE_TIMEOUT'] must be a positive number of seconds, {limit}, or None; not {idle!r}.",
                hint=f"The default is {DEFAULTS['EDIT_IDLE_TIMEOUT']!r} (15 minutes); None keeps idle tabs' locks.",
                id="dynalock.E018",
            )
        )
    return messages


def _clock_skew(skew: Any) -> list[CheckMessage]:
    if skew is None or (_is_number(skew) and 0 <= skew < math.inf):
        return []
    return [
        Error(
            f"DYNALOCK['MAX_CLOCK_SKEW'] must be None or a number of seconds >= 0, not {skew!r}.",
            hint="The most any two hosts' wall clocks may differ by (e.g. 1.0 under NTP), or None "
            "to never compare clocks (the default).",
            id="dynalock.E017",
        )
    ]


def _renewal_workers(workers: Any) -> list[CheckMessage]:
    if isinstance(workers, int) and not isinstance(workers, bool) and 1 <= workers <= MAX_RENEWAL_WORKERS:
        return []
    return [
        Error(
            f"DYNALOCK['RENEWAL_WORKERS'] must be a whole number from 1 to {MAX_RENEWAL_WORKERS}, not {workers!r}.",
            hint=f"The default is {DEFAULTS['RENEWAL_WORKERS']!r}: the threads renewing the process's leases side "
            "by side. Keep it within BOTO_CONFIG's max_pool_connections (10 by default).",
            id="dynalock.E024",
        )
    ]


def _boto_config(values: dict[str, Any]) -> list[CheckMessage]:
    try:
        budget = retry_budget_seconds(values["BOTO_CONFIG"])
    except ConfigurationError as error:
        return [
            Error(
                f"DYNALOCK['BOTO_CONFIG'] must be a dict of botocore Config arguments: {error}",
                hint=f"For example {RECOMMENDED_CONFIG}, written as a dict.",
                id="dynalock.E008",
            )
        ]
    lease, period = values["LEASE_DURATION"], values["HEARTBEAT_PERIOD"]
    if not (_is_number(lease) and _is_number(period) and lease > period > 0):
        return []  # E004-E006 say what to fix first
    slack = float(lease) - float(period)
    if budget <= slack:
        return []
    return [
        Warning(
            f"One DynamoDB call with DYNALOCK['BOTO_CONFIG'] may block for {budget:g}s (time-outs x attempts + "
            f"backoff), longer than the {slack:g}s a lease can wait for its renewal.",
            hint=f"Lower the time-outs and attempts (e.g. {RECOMMENDED_CONFIG}) or raise LEASE_DURATION.",
            id="dynalock.W001",
        )
    ]


def _simple_types(values: dict[str, Any]) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    if not isinstance(values["KEY_PREFIX"], str):
        messages.append(
            Error("DYNALOCK['KEY_PREFIX'] must be a string.", hint='For example "crm:".', id="dynalock.E009")
        )
    status = values["CONTENTION_STATUS"]
    if not isinstance(status, int) or isinstance(status, bool) or not 400 <= status <= 599:
        messages.append(
            Error(
                f"DYNALOCK['CONTENTION_STATUS'] must be an HTTP error status (400-599), not {status!r}.",
                hint="423 (Locked) is the default; 409 (Conflict) is the common alternative.",
                id="dynalock.E010",
            )
        )
    endpoint = values["ENDPOINT_URL"]
    if endpoint is not None and not (isinstance(endpoint, str) and urlparse(endpoint).scheme in {"http", "https"}):
        messages.append(
            Error(
                f"DYNALOCK['ENDPOINT_URL'] must be an http(s) URL or None, not {endpoint!r}.",
                hint="Leave it None for AWS; http://127.0.0.1:8000 for DynamoDB Local.",
                id="dynalock.E011",
            )
        )
    owner = values["OWNER_NAME"]
    if owner is not None and not (isinstance(owner, str) and owner):
        messages.append(
            Error(
                f"DYNALOCK['OWNER_NAME'] must be a non-empty string or None, not {owner!r}.",
                hint="Leave it None: each process then gets its own host-pid-random name.",
                id="dynalock.E012",
            )
        )
    scheduler = values["BEAT_SCHEDULER"]
    if not (isinstance(scheduler, str) and re.fullmatch(r"[\w.]+[:.]\w+", scheduler)):
        # Not imported here: Celery is optional, and LeaderScheduler says what it cannot import when beat starts.
        messages.append(
            Error(
                f"DYNALOCK['BEAT_SCHEDULER'] must be the dotted path of a Celery beat scheduler, not {scheduler!r}.",
                hint='The default is "celery.beat:PersistentScheduler"; django-celery-beat\'s is '
                '"django_celery_beat.schedulers:DatabaseScheduler".',
                id="dynalock.E030",
            )
        )
    for name, check_id in (
        ("ADMIN_SHOWS_ALL_KEYS", "E015"),
        ("SHOW_HOLDER_TO_ANONYMOUS", "E016"),
        ("TRACE_KEYS", "E028"),
    ):
        if not isinstance(values[name], bool):
            messages.append(
                Error(
                    f"DYNALOCK['{name}'] must be True or False.",
                    hint="The default is False.",
                    id=f"dynalock.{check_id}",
                )
            )
    if not isinstance(values["DELETE_ON_RELEASE"], bool):
        messages.append(
            Error(
                "DYNALOCK['DELETE_ON_RELEASE'] must be True or False.", hint="The default is False.", id="dynalock.E013"
            )
        )
    elif values["DELETE_ON_RELEASE"]:
        messages.append(
            Warning(
                "DYNALOCK['DELETE_ON_RELEASE'] deletes released items, and with them the fencing counter: "
                "the next token restarts from the wall clock, so a clock behind the last holder's can issue "
                "a smaller token.",
                hint="Keep the default (False): released items are kept and cleaned up by TTL.",
                id="dynalock.W002",
            )
        )
    return messages


@register(TAG, Tags.database, deploy=True)
def check_table(app_configs: Any = None, **_: Any) -> list[CheckMessage]:
    """The table exists, has the right key schema and TTL enabled (one DescribeTable, one DescribeTimeToLive)."""
    if check_settings():
        return []  # the settings checks already say what to fix first
    from .client import get_client

    client = get_client()
    try:
        description = client.describe_table()
    except TableNotFound:
        return [
            Error(
                f"The lock table {client.table_name!r} does not exist.",
                hint="Run: python manage.py dynalock createtable",
                id="dynalock.E020",
            )
        ]
    except ConfigurationError as error:  # no region: boto3 cannot even build its client
        return [Error(str(error), id="dynalock.E023")]
    except DynamoDBError as error:
        return [
            Error(
                f"DynamoDB could not be asked about the lock table: {error}",
                hint="Check credentials, region and ENDPOINT_URL.",
                id="dynalock.E022",
            )
        ]
    messages: list[CheckMessage] = [
        Error(f"The lock table {client.table_name!r}: {problem}.", id="dynalock.E021")
        for problem in description.problems
    ]
    if description.ttl_status not in {"ENABLED", "ENABLING"}:
        messages.append(
            Warning(
                f"TTL is not enabled on the lock table {client.table_name!r}: released locks are never cleaned up.",
                hint="Run: python manage.py dynalock createtable (it enables TTL on an existing table too, "
                "or says the endpoint has no TTL API, as dynalite has none: there TTL is unavailable)",
                id="dynalock.W020",
            )
        )
    if description.is_eventually_consistent_global_table:
        messages.append(
            Warning(
                f"The lock table {client.table_name!r} is a global table whose replicas agree only eventually "
                f"(MultiRegionConsistency {description.multi_region_consistency or 'EVENTUAL'}, replicas in "
                f"{', '.join(description.replica_regions)}): a lock taken in one region is not seen in another "
                "for a second or more, so two regions can each hold it at once.",
                hint="Use a table in one region, or a multi-Region strongly consistent (MRSC) global table; "
                "see docs/guarantees.md, Global tables.",
                id="dynalock.W022",
            )
        )
    if description.live_index_status != "ACTIVE":
        state = description.live_index_status or "missing"
        messages.append(
            Warning(
                f"The live-locks index of the lock table {client.table_name!r} is {state}: the live-locks "
                "live-locks page and `dynalock list` scan the whole table, released items included.",
                hint="Run: python manage.py dynalock createindex (it waits until the index is ACTIVE)",
                id="dynalock.W021",
            )
        )
    return messages
