"""Where a waiter stands in a line as stored: read by the rules of :mod:`dynalock_django.dynamodb.wire.waiters`."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb.wire.waiters import MAX_WAITERS, entry, place_in_line

pytestmark = pytest.mark.unit


def test_live_entries_count_however_many_stale_ones_joined_before_them():
    """The line is cut to its live entries before anything else: stale entries that joined earlier, however many,
    hide no live one (an arrival would see nobody ahead, and a waiter in line itself out of it)."""
    now_ms = 1_000_000_000
    line = {f"dead{number}": entry("dead", 1_000 + number, 5.0) for number in range(MAX_WAITERS)}
    line["me"] = entry("me", now_ms, 5.0)
    value = {"M": line}
    assert place_in_line(value, "me", now_ms / 1000).joined
    assert place_in_line(value, "me", now_ms / 1000).ahead == 0
    assert place_in_line(value, None, now_ms / 1000).ahead == 1
    assert len(place_in_line(value, None, now_ms / 1000).stale) == MAX_WAITERS
