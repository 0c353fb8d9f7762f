"""The botocore Config a lock client runs with, and how long one call may block under it.

A heartbeat is one botocore call, retries included. If that call can block
longer than the lease's slack (lease minus heartbeat period), one bad
moment loses the lease, so the client warns at construction.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError

from ..exceptions import ConfigurationError

# botocore's standard mode: 4 attempts for DynamoDB; throttling backoff is
# rand(0, 1) * min(1 s * 2**i, 20 s) before retry i+1.
_STANDARD_DYNAMODB_ATTEMPTS = 4
_LEGACY_DYNAMODB_ATTEMPTS = 11
_MAX_BACKOFF = 20.0

RECOMMENDED_CONFIG = 'Config(connect_timeout=1, read_timeout=2, retries={"mode": "standard", "total_max_attempts": 3})'
"""The botocore ``Config`` whose every call ends well inside the default lease (``RetryBudgetWarning`` names it)."""
# The same, as the Django layer's setting holds it: a dict of Config's arguments.
RECOMMENDED_SETTING = (
    'DYNALOCK["BOTO_CONFIG"] = {"connect_timeout": 1, "read_timeout": 2, '
    '"retries": {"mode": "standard", "total_max_attempts": 3}}'
)


class RetryBudgetWarning(UserWarning):
    """A botocore call may block longer than a lease can wait for its renewal."""


def config_from_options(options: Mapping[str, Any]) -> Config:
    """A botocore ``Config`` from its keyword arguments; ConfigurationError says which one is wrong."""
    try:
        return Config(**options)
    except (TypeError, ValueError, AttributeError, BotoCoreError) as error:  # botocore's own checks raise all four
        raise ConfigurationError(str(error)) from error


def retry_budget_seconds(options: Mapping[str, Any]) -> float:
    """The longest one DynamoDB call may block with these botocore ``Config`` arguments.

    Every attempt timing out, with the longest backoffs in between: compare it
    with ``lease_duration - heartbeat_period``. ConfigurationError if they are
    not valid ``Config`` arguments.
    """
    config = config_from_options(options)
    try:
        return worst_case_call_seconds(config)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(f"time-outs and attempt counts must be numbers: {error}") from error


def worst_case_call_seconds(config: Any) -> float:
    """The longest one call can take: every attempt timing out, with the longest backoffs."""
    retries = dict(config.retries or {})
    mode = retries.get("mode") or os.environ.get("AWS_RETRY_MODE") or "standard"
    if "total_max_attempts" in retries:
        attempts = int(retries["total_max_attempts"])
    elif "max_attempts" in retries:
        attempts = int(retries["max_attempts"]) + 1
    elif os.environ.get("AWS_MAX_ATTEMPTS", "").isdigit():
        attempts = int(os.environ["AWS_MAX_ATTEMPTS"])
    else:
        attempts = _LEGACY_DYNAMODB_ATTEMPTS if mode == "legacy" else _STANDARD_DYNAMODB_ATTEMPTS
    attempts = max(1, attempts)
    if mode == "legacy":
        backoff = sum(0.05 * 2.0**i for i in range(attempts - 1))
    else:
        backoff = sum(min(2.0**i, _MAX_BACKOFF) for i in range(attempts - 1))
    per_attempt = float(config.connect_timeout or 60) + float(config.read_timeout or 60)
    return attempts * per_attempt + backoff


def warn_if_too_slow(config: Any, *, lease_duration: float, heartbeat_period: float) -> None:
    budget = worst_case_call_seconds(config)
    slack = lease_duration - heartbeat_period
    if budget > slack:
        warnings.warn(
            f"One DynamoDB call with this botocore config may block for {budget:g}s (timeouts x attempts + "
            f"backoff), longer than the {slack:g}s a lease can wait for its renewal "
            f"(lease_duration {lease_duration:g}s - heartbeat_period {heartbeat_period:g}s). "
            # Said for both readers: the protocol's, who passes a boto3 client, and the Django layer's, whose
            # client is built from a setting (the protocol cannot tell which built this one).
            f"Shorten its time-outs and attempts, or raise the lease: with a LockClient, build the boto3 client "
            f"you pass it with config={RECOMMENDED_CONFIG} (or raise lease_duration); with Django, set "
            f"{RECOMMENDED_SETTING} (or raise LEASE_DURATION).",
            RetryBudgetWarning,
            stacklevel=5,
        )
