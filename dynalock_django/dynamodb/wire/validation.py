"""Checks of options and arguments, each error naming the problem and the fix."""

from __future__ import annotations

import math

from ..exceptions import ConfigurationError, InvalidLockRequest
from . import item
from .item import Item


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_positive(label: str, value: object) -> None:
    if not is_number(value) or not value > 0:  # type: ignore[operator]
        raise ConfigurationError(f"{label} must be a positive number of seconds, not {value!r}.")


def check_clock_skew(value: object) -> None:
    """``max_clock_skew``: None (the clock-free rule alone) or a finite number of seconds >= 0."""
    if value is None:
        return
    if not is_number(value) or not 0 <= value < math.inf:  # type: ignore[operator]
        raise ConfigurationError(
            f"max_clock_skew must be None or a number of seconds >= 0, not {value!r}: the most any two "
            "wall clocks of the clients sharing the table may differ by (for example 1.0 under NTP), "
            "or None to never compare clocks."
        )


def check_breaker(threshold: object, cool_down: object) -> None:
    """``breaker_threshold``: calls in a row without an answer that open the breaker (None: never); its cool-down."""
    if threshold is not None and (not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1):
        raise ConfigurationError(
            f"breaker_threshold must be a positive integer (calls without an answer in a row that make the "
            f"next calls fail at once), or None to never fail at once; not {threshold!r}."
        )
    check_positive("breaker_cool_down", cool_down)


def check_durations(lease_duration: object, heartbeat_period: object, **others: object) -> None:
    for label, value in {"lease_duration": lease_duration, "heartbeat_period": heartbeat_period, **others}.items():
        check_positive(label, value)
    lease, period = float(lease_duration), float(heartbeat_period)  # type: ignore[arg-type]
    if lease <= 2 * period:
        raise ConfigurationError(
            f"lease_duration ({lease:g}s) must be more than twice heartbeat_period ({period:g}s), "
            f"so one failed renewal does not lose the lock: raise lease_duration above {2 * period:g}s "
            f"or lower heartbeat_period below {lease / 2:g}s."
        )


def check_name(label: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        allowed = "a non-empty string or None" if optional else "a non-empty string"
        raise ConfigurationError(f"{label} must be {allowed}, not {value!r}.")


def check_key(label: str, key: object, max_bytes: int) -> None:
    if not isinstance(key, str):
        raise InvalidLockRequest(f"Lock {label} must be a string, not {type(key).__name__}.")
    if not key:
        raise InvalidLockRequest(f"Lock {label} must not be empty.")
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidLockRequest(
            f"Lock {label} is {size} bytes in UTF-8, over DynamoDB's {max_bytes}-byte limit; "
            "use a shorter key (for example a hash of it)."
        )


def check_fencing_token(token: object) -> None:
    if not isinstance(token, int) or isinstance(token, bool):
        raise InvalidLockRequest(f"fencing_token must be an integer, not {token!r}.")


def check_timeout(timeout: object) -> None:
    # "not >= 0" refuses NaN too, which compares false with every deadline and so would never end a wait.
    if timeout is not None and (not is_number(timeout) or not timeout >= 0):  # type: ignore[operator]
        raise InvalidLockRequest(f"timeout must be a number of seconds >= 0 or None, not {timeout!r}.")


def check_page_size(limit: object) -> None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise InvalidLockRequest(f"limit must be a positive integer, not {limit!r}.")


def check_data(data: object, largest_item_without_data: Item) -> None:
    """``data`` must be bytes that keep the item under DynamoDB's 400 KB limit."""
    if data is None:
        return
    if not isinstance(data, bytes):
        raise InvalidLockRequest(f"data must be bytes or None, not {type(data).__name__}; encode it first.")
    size = item.item_size({**largest_item_without_data, item.DATA: {"B": data}})
    if size > item.MAX_ITEM_BYTES:
        raise InvalidLockRequest(
            f"data is {len(data)} bytes, which makes the lock item about {size} bytes, over DynamoDB's "
            f"{item.MAX_ITEM_BYTES}-byte item limit. Store the payload elsewhere and put a reference in data."
        )
