"""Requests and times of the lock protocol, against the local endpoint (or $DYNALOCK_TEST_ENDPOINT_URL).

    python -m tests.benchmarks.protocol [--rounds 200] [--kills 5]

Prints one table. Times are from this run on this machine: compare rows, not machines.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.aws.local_server import LocalDynamoDB

from ..dynamodb import processes
from ..dynamodb_support import (
    ENDPOINT_ENV,
    HEARTBEAT,
    LEASE,
    RequestCounter,
    make_dynamodb,
    short_lease_client,
    unique,
)

spawn = multiprocessing.get_context("spawn")
Row = tuple[str, str, str]


@contextlib.contextmanager
def endpoint() -> Iterator[str]:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    if os.environ.get(ENDPOINT_ENV):
        yield os.environ[ENDPOINT_ENV]
        return
    with LocalDynamoDB() as url:
        yield url


def counted_client(endpoint_url: str, table_name: str) -> tuple[LockClient, RequestCounter]:
    dynamodb = make_dynamodb(endpoint_url)
    counter = RequestCounter(dynamodb)
    return LockClient(dynamodb, table_name, lease_duration=LEASE, heartbeat_period=HEARTBEAT), counter


def per_call(rounds: int, operation: Callable[[], Any], counter: RequestCounter) -> tuple[float, float, str]:
    """Median ms, p99 ms, and the requests each call made (by operation name)."""
    before = counter.calls.copy()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        operation()
        times.append((time.perf_counter() - started) * 1000)
    made = counter.calls - before
    requests = ", ".join(f"{count / rounds:g} {name}" for name, count in sorted(made.items()))
    return statistics.median(times), _p99(times), requests


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else values[0]


def uncontended(endpoint_url: str, table_name: str, rounds: int) -> list[Row]:
    client, counter = counted_client(endpoint_url, table_name)
    keys = iter(unique("free") for _ in range(rounds))
    median, p99, made = per_call(rounds, lambda: client.acquire(next(keys)).release(), counter)
    reused = unique("reused")
    median2, p992, made2 = per_call(rounds, lambda: client.acquire(reused).release(), counter)
    client.close()
    return [
        ("acquire + release, new key", made, f"{median:.2f} / {p99:.2f}"),
        ("acquire + release, released key", made2, f"{median2:.2f} / {p992:.2f}"),
    ]


def refused(endpoint_url: str, table_name: str, rounds: int) -> list[Row]:
    holder, _ = counted_client(endpoint_url, table_name)
    key = unique("held")
    lease = holder.acquire(key)
    client, counter = counted_client(endpoint_url, table_name)
    median, p99, made = per_call(rounds, lambda: client.try_acquire(key), counter)
    # An endpoint that does not return the old item with a refusal: one consistent read more.
    client.dynamodb.meta.events.register("before-parameter-build.dynamodb.UpdateItem", _drop_return_old)
    median2, p992, made2 = per_call(rounds, lambda: client.try_acquire(key), counter)
    lease.release()
    holder.close()
    client.close()
    return [
        ("failed try_acquire (old item returned)", made, f"{median:.2f} / {p99:.2f}"),
        ("failed try_acquire (no old item)", made2, f"{median2:.2f} / {p992:.2f}"),
    ]


def _drop_return_old(params: dict[str, Any], **_: Any) -> None:
    params.pop("ReturnValuesOnConditionCheckFailure", None)


def heartbeats(endpoint_url: str, table_name: str, periods: int) -> list[Row]:
    client, counter = counted_client(endpoint_url, table_name)
    lease = client.acquire(unique("beating"))
    before = counter.renewals["UpdateItem"]
    time.sleep(periods * HEARTBEAT)
    beats = counter.renewals["UpdateItem"] - before
    lease.release()
    client.close()
    return [(f"heartbeat ({HEARTBEAT:g} s period, {periods} periods)", f"{beats / periods:.2f} UpdateItem", "-")]


def detached_renewals(endpoint_url: str, table_name: str, rounds: int) -> list[Row]:
    """A browser tab's lock, granted by one client and renewed through another."""
    granting, _ = counted_client(endpoint_url, table_name)
    lease = granting.acquire(unique("tab"), owner_name="browser-tab", keep_alive=False)
    serving, counter = counted_client(endpoint_url, table_name)
    handle = serving.lease(lease.key, owner_name="browser-tab", fencing_token=lease.fencing_token)
    median, p99, made = per_call(rounds, handle.extend, counter)
    handle.release()
    granting.close()
    serving.close()
    return [("renew a detached lease from another client", made, f"{median:.2f} / {p99:.2f}")]


def handoff(endpoint_url: str, table_name: str, rounds: int) -> list[Row]:
    """Release in one client, a waiter in another client gets it: how long between the two."""
    holder, _ = counted_client(endpoint_url, table_name)
    waiter, counter = counted_client(endpoint_url, table_name)
    delays = []
    before = counter.calls.copy()
    for _ in range(rounds):
        key = unique("handoff")
        lease = holder.acquire(key)
        got: list[float] = []

        def wait_for(key: str = key, got: list[float] = got) -> None:
            lease = waiter.acquire(key, timeout=10)
            got.append(time.perf_counter())
            lease.release()

        thread = threading.Thread(target=wait_for)
        thread.start()
        time.sleep(0.05)
        released_at = time.perf_counter()
        lease.release()
        thread.join(10)
        delays.append((got[0] - released_at) * 1000)
    holder.close()
    waiter.close()
    made = ", ".join(f"{n / rounds:.1f} {name}" for name, n in sorted((counter.calls - before).items()))
    timing = f"{statistics.median(delays):.1f} / {_p99(delays):.1f}"
    return [("handoff: release -> a waiter in another client holds it", f"waiter: {made}", timing)]


def takeover_after_kill(endpoint_url: str, table_name: str, kills: int) -> list[Row]:
    """SIGKILL a holder process; time from its last safe moment until a waiter holds the lock."""
    late = []
    for _ in range(kills):
        key = unique("killed")
        safe_until, acquired = spawn.Value("d", 0.0), spawn.Event()
        holder = spawn.Process(
            target=processes.hold_and_report, args=(endpoint_url, table_name, key, safe_until, acquired, 60.0)
        )
        holder.start()
        acquired.wait(30)
        waiter = short_lease_client(make_dynamodb(endpoint_url), table_name)
        killed_at = time.monotonic()
        holder.kill()
        holder.join()
        waiter.acquire(key, timeout=10).release()
        late.append((time.monotonic() - killed_at) * 1000)
        waiter.close()
    return [
        (
            f"takeover after SIGKILL ({LEASE:g} s lease, {kills} kills)",
            "-",
            f"{statistics.median(late):.0f} / {max(late):.0f} (max)",
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args()
    with endpoint() as endpoint_url:
        table_name = unique("bench")
        LockClient(make_dynamodb(endpoint_url), table_name).create_table()
        rows = [
            *uncontended(endpoint_url, table_name, args.rounds),
            *refused(endpoint_url, table_name, args.rounds),
            *heartbeats(endpoint_url, table_name, 20),
            *detached_renewals(endpoint_url, table_name, args.rounds),
            *handoff(endpoint_url, table_name, 20),
            *takeover_after_kill(endpoint_url, table_name, args.kills),
        ]
    print_table(("operation", "DynamoDB requests per call", "ms median / p99"), rows)


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
