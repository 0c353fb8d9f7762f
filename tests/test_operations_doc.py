"""docs/operations.md's requests per operation are the code's: each row is run against a real store and counted.

Run where the store behaves as DynamoDB does for these counts: it returns the
item that refused a write, and has transactions (moto; dynalite lacks both).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dynalock_django.dynamodb import LockClient

from .dynamodb_support import RequestCounter, make_dynamodb, unique

DOC = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
ROW = re.compile(r"^\| (?P<operation>[^|]+?) \| (?P<requests>(?:\d+ [A-Za-z]+(?: \+ )?)+) \| [^|]+ \|$")


def documented() -> dict[str, collections.Counter[str]]:
    """The table under "Requests per operation": operation -> requests by DynamoDB operation."""
    section = DOC.read_text().split("### Requests per operation", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if match := ROW.match(line):
            counted: collections.Counter[str] = collections.Counter()
            for part in match["requests"].split(" + "):
                number, name = part.split(" ")
                counted[name] += int(number)
            rows[match["operation"]] = counted
    return rows


def operations(holder: LockClient, other: LockClient) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Each documented operation: (what sets it up, uncounted; the operation, counted)."""
    key = unique()
    state: dict[str, Any] = {}

    def hold() -> None:
        state["lease"] = holder.acquire(key)

    def hold_with_queue() -> None:
        hold()
        other.join_queue(key, "w1", name="someone")

    return {
        "`acquire` of a free lock": (lambda: None, lambda: holder.acquire(unique())),
        "`release`": (hold, lambda: state["lease"].release()),
        "heartbeat renewal (`extend`)": (hold, lambda: state["lease"].extend()),
        "`try_acquire` of a held lock": (hold, lambda: other.try_acquire(key)),
        "`get`": (hold, lambda: other.get(key)),
        "`acquire_many` of 2 free keys": (
            lambda: None,
            lambda: state.update(group=holder.acquire_many([unique(), unique()])),
        ),
        "`group.release()` of 2": (
            lambda: state.update(group=holder.acquire_many([unique(), unique()])),
            lambda: state["group"].release(),
        ),
        "`force_release`": (
            lambda: (hold(), state.update(read=other.get(key))),
            lambda: other.force_release(state["read"], released_by="ops"),
        ),
        "`take_over`": (lambda: (hold(), state.update(read=other.get(key))), lambda: other.take_over(state["read"])),
        '`join_queue` (the admin\'s "Ask to edit")': (
            hold_with_queue,
            lambda: other.join_queue(key, "w2", name="another"),
        ),
        "`refresh_waiter` (a waiting page's poll)": (hold_with_queue, lambda: other.refresh_waiter(key, "w1")),
        "`live_page` (one page of live locks)": (hold, lambda: other.live_page(limit=50)),
    }


@pytest.mark.requires("old_item_on_refusal")
@pytest.mark.requires("transactions")
def test_each_documented_operation_makes_the_documented_requests(endpoint_url, make_client):
    # Counting, not timing: a patient read time-out, so that a slow answer of a busy machine fails nothing.
    dynamodb = make_dynamodb(endpoint_url, read_timeout=5)
    counter = RequestCounter(dynamodb)
    quiet = {"heartbeat_period": 60, "lease_duration": 180}  # no heartbeat among the counted requests
    rows = documented()
    measured = {}
    names = list(operations(make_client(dynamodb, **quiet), make_client(dynamodb, **quiet)))
    assert sorted(names) == sorted(rows)  # every row measured, every measured operation documented
    for name in names:
        set_up, run = operations(make_client(dynamodb, **quiet), make_client(dynamodb, **quiet))[name]
        set_up()
        counter.reset()
        run()
        measured[name] = collections.Counter(counter.calls)
    assert measured == rows
