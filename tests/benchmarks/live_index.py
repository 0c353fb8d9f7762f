"""What listing live locks costs with the live-locks index, against a scan of the whole table, in one run.

    python -m tests.benchmarks.live_index [--released 100000] [--walk-pages 10]

The table holds 10 live locks (taken through the client, so marked live) among
``--released`` released items (written 25 at a time with BatchWriteItem). Each row
is one way to list the live locks: the live-locks page's first page and ``dynalock list``
from the index (today's code), and the same by a scan of the table (what both did
before the index, and what ``?other_clients=1`` / ``list --other-clients`` do now).

Read units are computed, not reported: moto answers ``ReturnConsumedCapacity=TOTAL`` with
1.0 for every request, whatever it read. As DynamoDB bills a Scan: per request, the
bytes of every item it read (filtered out or not) rounded up to 4 KB, half a unit per
4 KB (eventually consistent). Item bytes are ``item_size`` (attribute names plus values);
every released item has the same size, so a page's bytes are the returned items' sizes
plus (ScannedCount - Count) released items.

Walking the live-locks page's scan to its last page takes one request per 100 items: on moto
each request costs time proportional to the whole table, so only the first
``--walk-pages`` pages are timed and the rest extrapolated (labelled in the row), and
their read units are the timed pages' average (every page reads 100 items of one size).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import time
import uuid
from io import StringIO
from typing import Any

import django

from .protocol import print_table

LIVE = 10
BATCH = 25
LIVE_LOCKS = "/admin/dynalock_django/lock/"


class ScanMeter:
    """Every Scan the process's client sends, and its computed read units."""

    def __init__(self, dynamodb: Any, released_item_bytes: int) -> None:
        self.released_item_bytes = released_item_bytes
        self.requests = 0
        self.read_units = 0.0
        dynamodb.meta.events.register("provide-client-params.dynamodb.Scan", self._request)
        dynamodb.meta.events.register("after-call.dynamodb.Scan", self._response)

    def reset(self) -> None:
        self.requests, self.read_units = 0, 0.0

    def _request(self, **_: Any) -> None:
        self.requests += 1

    def _response(self, parsed: dict[str, Any], **_: Any) -> None:
        from dynalock_django.dynamodb.wire.item import item_size

        returned = parsed.get("Items", [])
        skipped = parsed.get("ScannedCount", len(returned)) - len(returned)
        read = sum(item_size(item) for item in returned) + skipped * self.released_item_bytes
        self.read_units += math.ceil(read / 4096) * 0.5


def is_live_job(key: str) -> bool:
    return key.startswith("job-") and key.endswith("-live")


def released_item(i: int) -> dict[str, Any]:
    """A released lock as our client leaves it (fixed-width values: every one has the same size)."""
    return {
        "key": {"S": f"job-{i:07d}"},
        "ownerName": {"S": "web-1.example.com:12345:0123abcd"},
        "leaseDuration": {"S": "20000"},
        "recordVersionNumber": {"S": str(uuid.uuid4())},
        "isReleased": {"S": "1"},
        "fencingToken": {"N": "1795470430034"},
        "acquiredAt": {"N": "1795470430034"},
        "renewedAt": {"N": "1795470430034"},
        "ttl": {"N": "1795556830"},
    }


def fill(dynamodb: Any, table_name: str, released: int) -> float:
    started = time.perf_counter()
    for start in range(0, released, BATCH):
        batch = [{"PutRequest": {"Item": released_item(i)}} for i in range(start, min(start + BATCH, released))]
        dynamodb.batch_write_item(RequestItems={table_name: batch})
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--released", type=int, default=100_000)
    parser.add_argument("--walk-pages", type=int, default=10, help="Scan pages timed before extrapolating (0: all).")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from dynalock_django import lock_key
    from dynalock_django.client import get_client
    from dynalock_django.dynamodb.wire.item import item_size
    from dynalock_django.testing import lock_table

    setup_test_environment()  # responses carry their template context (the rows, the next-page cursor)
    call_command("migrate", verbosity=0)
    admin = User.objects.create_superuser("admin", password="pw")
    # A minutes-long run on a slow local server: leases and time-outs long enough for it.
    with lock_table(LEASE_DURATION=3600, HEARTBEAT_PERIOD=60, BOTO_CONFIG={"read_timeout": 120}):
        client = get_client()
        filled = fill(client.dynamodb, client.table_name, args.released)
        print(f"Wrote {args.released:,} released items in {filled:.0f} s ({args.released // BATCH:,} BatchWriteItem)")
        # Spread among the released keys: moto scans in key order, DynamoDB in its hash order, where
        # live locks fall anywhere; next to each other they would flatter (or, last, wrong) the scan.
        spread = random.Random(15).sample(range(args.released), LIVE)
        leases = [lock_key(f"job-{position:07d}-live").acquire() for position in spread]
        meter = ScanMeter(client.dynamodb, item_size(released_item(0)))
        browser = Client()
        browser.force_login(admin)
        rows = [
            live_locks_first_page(browser, meter, "index (now)", {}),
            live_locks_first_page(browser, meter, "table scan (before)", {"other_clients": "1"}),
            live_locks_walk(browser, meter, args.walk_pages, args.released),
            command(meter, "index (now)", []),
            command(meter, "table scan (before), --page-size 1000", ["--other-clients", "--page-size", "1000"]),
        ]
        for lease in leases:
            lease.release()
    print_table(("listing", "source", "ms", "Scan requests", "read units (computed)", "live locks shown"), rows)


def live_rows(response: Any) -> int:
    return sum(1 for row in response.context["page"].rows if is_live_job(row.lock.key))


def live_locks_first_page(browser: Any, meter: ScanMeter, source: str, params: dict[str, str]) -> tuple[str, ...]:
    times, shown = [], 0
    for _ in range(5):
        meter.reset()
        started = time.perf_counter()
        response = browser.get(LIVE_LOCKS, params)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
        shown = live_rows(response)
    median = f"{statistics.median(times):.1f} (median of 5)"
    return (
        "live locks, first page",
        source,
        median,
        str(meter.requests),
        f"{meter.read_units:g}",
        f"{shown} of {LIVE}",
    )


def live_locks_walk(browser: Any, meter: ScanMeter, walk_pages: int, released: int) -> tuple[str, ...]:
    """Every page of the scan, to the last: only then are all the live locks shown."""
    meter.reset()
    pages, shown, seconds, params = 0, 0, 0.0, {"other_clients": "1"}
    while True:
        started = time.perf_counter()
        response = browser.get(LIVE_LOCKS, params)
        seconds += time.perf_counter() - started
        pages += 1
        shown += live_rows(response)
        cursor = response.context["page"].next_cursor
        if cursor is None or pages == walk_pages:
            break
        params = {"other_clients": "1", "cursor": cursor}
    if cursor is None:
        row = (f"{seconds * 1000:.0f}", str(pages), f"{meter.read_units:g}", f"{shown} of {LIVE}")
    else:  # the rest extrapolated from the pages read
        total = math.ceil((released + LIVE) / 100)
        row = (
            f"{seconds * 1000 / pages * total:.0f} (extrapolated from {pages} pages)",
            str(total),
            f"{meter.read_units / pages * total:g} (idem)",
            f"{shown} in the first {pages} pages",
        )
    return ("live locks, every page", "table scan (before)", *row)


def command(meter: ScanMeter, source: str, args: list[str]) -> tuple[str, ...]:
    from django.core.management import call_command

    meter.reset()
    out = StringIO()
    started = time.perf_counter()
    call_command("dynalock", "list", *args, stdout=out)
    ms = (time.perf_counter() - started) * 1000
    shown = sum(1 for line in out.getvalue().splitlines() if is_live_job(line.split()[0]))
    return ("dynalock list", source, f"{ms:.0f}", str(meter.requests), f"{meter.read_units:g}", f"{shown} of {LIVE}")


if __name__ == "__main__":
    main()
