"""Native async: aacquire + arelease against acquire + release, and a thousand coroutines waiting for one key.

    python -m tests.benchmarks.async_locks [--rounds 200] [--waiters 1000]

Prints two tables from the same run against the local endpoint (or $DYNALOCK_TEST_ENDPOINT_URL).

The first is the price of sending each request from the client's call threads (one thread hop
per request) rather than from an async HTTP client: the alternative, aiobotocore, pins botocore
to a narrow range that boto3 releases leave behind (aiobotocore 3.10.0 requires
botocore<1.43.118,>=1.43.115, while boto3 1.44.5 needs botocore 1.44.5), and brings aiohttp.

The second: waiters each on a coroutine (aacquire) against the thread-per-waiter wrapping the
async API used before (``sync_to_async(acquire, thread_sensitive=False)``), with how long an
unrelated ``sync_to_async(thread_sensitive=False)`` call waits while they do, the threads and
Python memory they take, and the time from one holder's release to the next one's grant.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable

from asgiref.sync import sync_to_async

from dynalock_django.dynamodb import Lease, LockClient

from ..dynamodb_support import unique
from .many_locks import new_table, patient_client
from .protocol import endpoint, print_table


def acquire_and_release(client: LockClient, rounds: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    key = unique("pair")

    def sync_pair() -> None:
        client.acquire(key).release()

    async def async_pair() -> None:
        await (await client.aacquire(key)).arelease()

    sync_times = [timed(sync_pair) for _ in range(rounds)]

    async def async_rounds() -> list[float]:
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            await async_pair()
            times.append(time.perf_counter() - started)
        return times

    async_times = asyncio.run(async_rounds())
    sync_ms, async_ms = statistics.median(sync_times) * 1000, statistics.median(async_times) * 1000
    return (
        ("acquire + release", f"{sync_ms:.2f}", f"{percentile(sync_times) * 1000:.2f}", "1.00x"),
        (
            "aacquire + arelease",
            f"{async_ms:.2f}",
            f"{percentile(async_times) * 1000:.2f}",
            f"{async_ms / sync_ms:.2f}x",
        ),
    )


ON_COROUTINES = "coroutine (aacquire)"
ON_THREADS = "thread per waiter (before)"


def waiters(client: LockClient, count: int, how: str) -> tuple[str, ...]:
    key = unique("hot")
    threads_before = threading.active_count()

    async def take() -> Lease:
        if how == ON_COROUTINES:
            return await client.aacquire(key, timeout=600)
        return await sync_to_async(client.acquire, thread_sensitive=False)(key, timeout=600)

    async def unrelated_call() -> float:
        started = time.perf_counter()
        await sync_to_async(lambda: None, thread_sensitive=False)()
        return time.perf_counter() - started

    async def main() -> tuple[float, int, float, list[float]]:
        grants: list[float] = []
        released_at = 0.0

        async def waiter() -> None:
            nonlocal released_at
            lease = await take()
            grants.append(time.perf_counter() - released_at)
            released_at = time.perf_counter()
            await lease.arelease()

        first = await client.aacquire(key)
        tracemalloc.start()
        tasks = [asyncio.create_task(waiter()) for _ in range(count)]
        await asyncio.sleep(1.0)  # every waiter is waiting
        memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        threads = threading.active_count() - threads_before
        probe = asyncio.create_task(unrelated_call())
        await asyncio.sleep(0.1)
        released_at = time.perf_counter()
        await first.arelease()
        await asyncio.gather(*tasks)
        return memory, threads, await probe, grants

    memory, threads, probe_s, grants = asyncio.run(main())
    return (
        how,
        str(count),
        str(threads),
        f"{memory / count / 1024:.1f}",
        f"{probe_s * 1000:.0f}",
        f"{statistics.median(grants) * 1000:.1f}",
        f"{sum(grants):.1f}",
    )


def timed(operation: Callable[[], object]) -> float:
    started = time.perf_counter()
    operation()
    return time.perf_counter() - started


def percentile(times: list[float], fraction: float = 0.99) -> float:
    return sorted(times)[min(len(times) - 1, int(len(times) * fraction))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--waiters", type=int, default=1000)
    args = parser.parse_args()
    with endpoint() as endpoint_url:
        client, _ = patient_client(endpoint_url, new_table(endpoint_url))
        pairs = acquire_and_release(client, args.rounds)
        crowd = [waiters(client, args.waiters, how) for how in (ON_COROUTINES, ON_THREADS)]
        client.close()
    print_table(("one lock, uncontended", "median ms", "p99 ms", "async / sync"), list(pairs))
    print()
    header = (
        "waiting for one key in one event loop",
        "waiters",
        "threads added",
        "KB per waiter",
        "unrelated sync_to_async ms",
        "hand-off median ms",
        "all hand-offs s",
    )
    print_table(header, crowd)


if __name__ == "__main__":
    main()
