"""Many leases in one process: the most one client keeps alive with none renewed late, one worker against many.

    python -m tests.benchmarks.many_leases [--store moto|dynalite] [--workers 8] [--configs 20/5,6/1.5]

Every request goes through a proxy on 127.0.0.1 that adds 10 ms (DynamoDB's round trip within a
region, at its slow end) in front of the local store. One renewal worker is the old heartbeat: one
thread renewing each lease after the other. For each lease / heartbeat and worker count, a ladder
of lease counts (x1.5 a step) is held, each by a new client on a new table, for the time it takes
to acquire them plus two heartbeat periods; a count passes when no lease is lost and no renewal
started more than half a period after it fell due (the heartbeat's lag). The table gives the
largest count that passed, the renewals a second at the first that did not (the workers saturated:
their throughput), and this process's CPU per renewal there (the proxy's share included: it runs
in this process). The local store serves requests one
at a time (moto) or on one core (dynalite) on this shared machine: its own time per request caps
what any number of workers reaches; compare rows, not machines.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.leases.heartbeat import DEFAULT_RENEWAL_WORKERS

from ..chaos.proxy import FaultProxy, FaultRates
from ..dynamodb_support import RequestCounter, make_dynamodb, unique
from ..stores import Dynalite
from .protocol import endpoint, print_table

ADDED_ROUND_TRIP = 0.010
LADDER_STEP = 1.5
FIRST_COUNT = 10
ACQUIRING_THREADS = 8


@dataclass(frozen=True)
class Trial:
    count: int
    lost: int
    lag: float  # the most overdue renewal's lateness, seconds
    renewals_per_second: float
    cpu_ms_per_renewal: float

    def kept_up(self, period: float) -> bool:
        return self.lost == 0 and self.lag <= period / 2


@contextlib.contextmanager
def store_endpoint(name: str) -> Iterator[str]:
    if name == "dynalite":
        with Dynalite() as url:
            yield url
    else:
        with endpoint() as url:
            yield url


def trial(url: str, *, lease: float, period: float, workers: int, count: int) -> Trial:
    """Hold ``count`` leases with one client for their acquisition plus two periods, through the proxy."""
    dynamodb = make_dynamodb(url, read_timeout=max(2.0, period / 2), connect_timeout=1)
    table = unique("bench-many-leases")
    LockClient(make_dynamodb(url, read_timeout=30), table).create_table()
    client = LockClient(dynamodb, table, lease_duration=lease, heartbeat_period=period, renewal_workers=workers)
    counter = RequestCounter(dynamodb)
    worst = [0.0]
    client.process_state.heartbeat.add_lag_listener(lambda late: worst.__setitem__(0, max(worst[0], late)))
    keys = [unique("lease") for _ in range(count)]
    leases = []

    def acquire(part: list[str]) -> None:
        leases.extend(client.acquire(key, timeout=60) for key in part)

    threads = [threading.Thread(target=acquire, args=(keys[i::ACQUIRING_THREADS],)) for i in range(ACQUIRING_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Measured from here: every lease held, the heartbeat's work alone.
    worst[0] = 0.0
    before, cpu_before, started = counter.renewals["UpdateItem"], time.process_time(), time.monotonic()
    time.sleep(2 * period)
    renewals = counter.renewals["UpdateItem"] - before
    cpu = time.process_time() - cpu_before
    elapsed = time.monotonic() - started
    lost = sum(not held.is_held() for held in leases)
    client.close(release=False)
    client.dynamodb.delete_table(TableName=table)
    return Trial(count, lost, worst[0], renewals / elapsed, 1000 * cpu / max(1, renewals))


def ladder(url: str, *, lease: float, period: float, workers: int) -> tuple[Trial | None, Trial | None]:
    """The largest count kept up with, and the first that was not (None if the ladder's top was kept up with)."""
    passed, count = None, FIRST_COUNT
    while count <= 20_000:
        result = trial(url, lease=lease, period=period, workers=workers, count=count)
        print(
            f"  {lease:g}s/{period:g}s, {workers} worker(s), {count} leases: lost {result.lost}, "
            f"lag {result.lag:.2f}s, {result.renewals_per_second:.0f} renewals/s",
            flush=True,
        )
        if not result.kept_up(period):
            return passed, result
        passed, count = result, round(count * LADDER_STEP)
    return passed, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", choices=("moto", "dynalite"), default="moto")
    parser.add_argument("--workers", type=int, default=DEFAULT_RENEWAL_WORKERS)
    parser.add_argument("--configs", default="20/5,6/1.5", help="lease/heartbeat pairs, in seconds")
    args = parser.parse_args()
    # Each trial ends with a close that leaves its leases to run out: one "Lost lock" line each.
    logging.getLogger("dynalock_django.heartbeat").setLevel(logging.ERROR)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    configs = [tuple(float(part) for part in pair.split("/")) for pair in args.configs.split(",")]
    rows = []
    with (
        store_endpoint(args.store) as store_url,
        FaultProxy(store_url, FaultRates(latency=1.0, latency_seconds=ADDED_ROUND_TRIP), seed=0) as proxy,
    ):
        for lease, period in configs:
            baseline = None
            for workers in (1, args.workers):
                passed, failed = ladder(proxy.url, lease=lease, period=period, workers=workers)
                saturated = failed or passed
                rate = saturated.renewals_per_second if saturated else 0.0
                baseline = baseline or rate
                rows.append(
                    (
                        f"{lease:g} s / {period:g} s",
                        f"{workers}" + (" (the old heartbeat)" if workers == 1 else ""),
                        str(passed.count if passed else 0),
                        f"{passed.lag:.2f}" if passed else "-",
                        f"{rate:.0f}",
                        f"{rate / baseline:.1f}x" if baseline else "-",
                        f"{saturated.cpu_ms_per_renewal:.2f}" if saturated else "-",
                    )
                )
    print(f"\n{args.store} behind a proxy adding {ADDED_ROUND_TRIP * 1000:.0f} ms to every request\n")
    header = (
        "lease / heartbeat",
        "renewal workers",
        "most leases kept, none late",
        "its lag (s)",
        "renewals/s (saturated)",
        "vs 1 worker",
        "CPU ms / renewal",
    )
    print_table(header, rows)


if __name__ == "__main__":
    main()
