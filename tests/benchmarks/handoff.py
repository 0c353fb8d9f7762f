"""Hand-off: how long after a release a waiter holds the lock, on moto, dynalite and DynamoDB Local side by side.

    python -m tests.benchmarks.handoff [--rounds 20] [--stores moto,dynalite,dynamodb_local]

Per store: a waiter in another process (it joined the lock's line; the release comes at a random
moment of its looks), a waiter thread of the releasing process, and python-dynamodb-lock's waiter in
another process on the same table (its keys; it polls every ``--pdl-retry`` seconds), when it is
installed (``pip install python-dynamodb-lock``). A hand-off is timed from the moment the release
returns (the lock is free) to the moment the waiter's acquire returns (it holds it). A round trip (one
consistent GetItem) is measured on the same store, so a hand-off reads in round trips too. Prints one
table; times are this machine's.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import multiprocessing
import os
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.aws.local_server import LocalDynamoDB
from dynalock_django.dynamodb.wire.waiters import parse_waiters

from ..dynamodb_support import make_dynamodb, unique
from ..stores import AmazonDynamoDBLocal, Dynalite
from .protocol import print_table

spawn = multiprocessing.get_context("spawn")
SORT_KEY = "sort_key"  # python-dynamodb-lock's tables have one: both clients share the table
PATIENT = {"connect_timeout": 5, "read_timeout": 10}
SERVERS: dict[str, Callable[[], LocalDynamoDB]] = {
    "moto": LocalDynamoDB,
    "dynalite": Dynalite,
    "dynamodb_local": AmazonDynamoDBLocal,
}


def client(endpoint_url: str, table_name: str) -> LockClient:
    """The defaults' waiting pace (refresh_period 1 s: the head looks every 0.05 to 0.1 s)."""
    return LockClient(make_dynamodb(endpoint_url, **PATIENT), table_name, sort_key_name=SORT_KEY)


def ours_waiting(endpoint_url: str, table_name: str, keys: Any, granted: Any) -> None:
    """A waiter process: for each key it is sent, acquire it (waiting in line), report when, release it."""
    with client(endpoint_url, table_name) as waiter:
        for key in iter(keys.get, None):
            lease = waiter.acquire(key, sort_key="-", timeout=30)
            granted.put(time.monotonic())
            lease.release()


def pdl_waiting(endpoint_url: str, table_name: str, retry: float, keys: Any, granted: Any) -> None:
    """python-dynamodb-lock's waiter process: the same, with its acquire_lock polling every ``retry`` seconds."""
    waiter = pdl_client(endpoint_url, table_name)
    for key in iter(keys.get, None):
        lock = waiter.acquire_lock(
            key, retry_period=datetime.timedelta(seconds=retry), retry_timeout=datetime.timedelta(seconds=30)
        )
        granted.put(time.monotonic())
        waiter.release_lock(lock)
    waiter.close()


def pdl_client(endpoint_url: str, table_name: str) -> Any:
    import boto3
    from python_dynamodb_lock.python_dynamodb_lock import DynamoDBLockClient

    resource = boto3.resource("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    return DynamoDBLockClient(resource, table_name=table_name, partition_key_name="key", sort_key_name=SORT_KEY)


def pdl_installed() -> bool:
    try:
        import python_dynamodb_lock  # noqa: F401
    except ImportError:
        return False
    return True


def timed_handoffs(
    rounds: int,
    waiting: tuple[Any, ...],
    take: Callable[[str], Any],
    ready: Callable[[str], None],
    give: Callable[[Any], Any],
) -> list[float]:
    """Milliseconds from each release (``give`` returned) to the grant the waiter process ``waiting`` reports.

    ``waiting``: its target and first arguments (it gets the keys and reports on two queues); each round
    ``take`` holds a new key, the waiter is sent it, ``ready`` waits until it waits, ``give`` releases.
    """
    keys, granted = spawn.Queue(), spawn.Queue()
    worker = spawn.Process(target=waiting[0], args=(*waiting[1:], keys, granted))
    worker.start()
    delays = []
    for _ in range(rounds):
        key = unique("handoff")
        held = take(key)
        keys.put(key)
        ready(key)
        give(held)
        released = time.monotonic()
        delays.append((granted.get(timeout=30) - released) * 1000)
    keys.put(None)
    worker.join(30)
    return delays


def to_other_process(endpoint_url: str, table_name: str, rounds: int) -> list[float]:
    """Milliseconds from a release to the grant to a waiter process that joined the line."""
    holder = client(endpoint_url, table_name)

    def ready(key: str) -> None:
        until(lambda: len(parse_waiters(holder.get(key, sort_key="-").raw_line)) == 1)
        time.sleep(random.uniform(0.0, 0.2))  # the release at any moment of the waiter's looks

    try:
        return timed_handoffs(
            rounds,
            (ours_waiting, endpoint_url, table_name),
            lambda key: holder.acquire(key, sort_key="-"),
            ready,
            lambda lease: lease.release(),
        )
    finally:
        holder.close()


def to_same_process(endpoint_url: str, table_name: str, rounds: int) -> list[float]:
    """Milliseconds from a release to the grant to another thread of the same client."""
    shared = client(endpoint_url, table_name)
    delays = []
    for _ in range(rounds):
        key = unique("local")
        lease = shared.acquire(key, sort_key="-")
        got: list[float] = []

        def wait(key: str = key, got: list[float] = got) -> None:
            won = shared.acquire(key, sort_key="-", timeout=30)
            got.append(time.monotonic())
            won.release()

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.05)
        lease.release()
        released = time.monotonic()
        thread.join(30)
        delays.append((got[0] - released) * 1000)
    shared.close()
    return delays


def pdl_to_other_process(endpoint_url: str, table_name: str, rounds: int, retry: float) -> list[float]:
    holder = pdl_client(endpoint_url, table_name)
    try:
        return timed_handoffs(
            rounds,
            (pdl_waiting, endpoint_url, table_name, retry),
            holder.acquire_lock,
            lambda _: time.sleep(0.3 + random.uniform(0.0, retry)),  # it asked once and sleeps between polls
            holder.release_lock,
        )
    finally:
        holder.close()


def round_trip(endpoint_url: str, table_name: str, rounds: int) -> float:
    """The median milliseconds of one consistent GetItem on this store."""
    reader = client(endpoint_url, table_name)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        reader.get("rtt", sort_key="-")
        times.append((time.perf_counter() - started) * 1000)
    reader.close()
    return statistics.median(times)


def until(condition: Callable[[], bool], patience: float = 30.0) -> None:
    deadline = time.monotonic() + patience
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the waiter did not join the line")
        time.sleep(0.01)


def summary(delays: list[float]) -> str:
    return f"{statistics.median(delays):.0f} / {max(delays):.0f}"


@contextlib.contextmanager
def running(name: str) -> Iterator[str]:
    with SERVERS[name]() as endpoint_url:
        yield endpoint_url


def measure(name: str, rounds: int, pdl_retry: float) -> tuple[str, ...]:
    with running(name) as endpoint_url:
        table_name = unique("handoff-bench")
        LockClient(make_dynamodb(endpoint_url, **PATIENT), table_name, sort_key_name=SORT_KEY).create_table()
        rtt = round_trip(endpoint_url, table_name, 50)
        other = to_other_process(endpoint_url, table_name, rounds)
        local = to_same_process(endpoint_url, table_name, rounds)
        pdl = summary(pdl_to_other_process(endpoint_url, table_name, rounds, pdl_retry)) if pdl_installed() else "-"
    in_trips = statistics.median(other) / rtt
    return (name, f"{rtt:.1f}", summary(other), f"{in_trips:.1f}", summary(local), pdl)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--stores", default="moto,dynalite,dynamodb_local")
    parser.add_argument("--pdl-retry", type=float, default=0.1, help="python-dynamodb-lock's retry_period (s)")
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    rows = [measure(name, args.rounds, args.pdl_retry) for name in args.stores.split(",")]
    print_table(
        (
            "store",
            "GetItem ms",
            "to a waiting process ms (median / max)",
            "in round trips",
            "to a thread of the same process ms",
            f"python-dynamodb-lock, retry {args.pdl_retry:g} s ms",
        ),
        rows,
    )


if __name__ == "__main__":
    main()
