"""Many locks at once: acquire_many against one acquire after another, and how to renew a group's members.

    python -m tests.benchmarks.many_locks [--rounds 3]

Prints two tables, from the same run against the local endpoint (or $DYNALOCK_TEST_ENDPOINT_URL).
Times are this machine's and the local endpoint's (moto runs a 100-item transaction slowly):
compare rows, not machines. Write units follow DynamoDB's rule for items under 1 KB: one per
item written, two per item written in a transaction.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.wire import writes
from dynalock_django.dynamodb.wire.conditions import KeptAlive
from dynalock_django.dynamodb.wire.writes import Stamp

from ..dynamodb_support import RequestCounter, make_dynamodb, unique
from .protocol import endpoint, print_table

SIZES = (1, 10, 100, 250)
MEMBERS = 100


def patient_client(endpoint_url: str, table_name: str) -> tuple[LockClient, RequestCounter]:
    """Slow answers allowed, and no renewal while a row is measured."""
    dynamodb = make_dynamodb(endpoint_url, read_timeout=60)
    counter = RequestCounter(dynamodb)
    return LockClient(dynamodb, table_name, lease_duration=600, heartbeat_period=200), counter


def measured(rounds: int, operation: Callable[[], object], counter: RequestCounter) -> tuple[int, float]:
    """Requests per call and median seconds."""
    before, times = counter.total, []
    for _ in range(rounds):
        started = time.perf_counter()
        operation()
        times.append(time.perf_counter() - started)
    return round((counter.total - before) / rounds), statistics.median(times)


def lock_many(endpoint_url: str, rounds: int) -> list[tuple[str, ...]]:
    rows = []
    for size in SIZES:
        # A table per row: moto copies a table for each transaction, so a fuller table would slow later rows.
        client, counter = patient_client(endpoint_url, new_table(endpoint_url))
        keys = [unique("many") for _ in range(size)]

        def together(keys: list[str] = keys, client: LockClient = client) -> None:
            client.acquire_many(keys).release()

        def one_by_one(keys: list[str] = keys, client: LockClient = client) -> None:
            for lease in [client.acquire(key) for key in sorted(keys)]:
                lease.release()

        together_requests, together_s = measured(rounds, together, counter)
        one_by_one_requests, one_by_one_s = measured(rounds, one_by_one, counter)
        client.close()
        rows.append(
            (
                str(size),
                str(together_requests),
                # acquire and release: two writes a key, each twice the units in a transaction; the tokens' read
                "2 / 0" if size == 1 else f"{4 * size} / {size}",
                f"{together_s * 1000:.0f}",
                str(one_by_one_requests),
                f"{2 * size} / 0",
                f"{one_by_one_s * 1000:.0f}",
                f"{one_by_one_requests / together_requests:.1f}x",
            )
        )
    return rows


def new_table(endpoint_url: str) -> str:
    table_name = unique("bench")
    with LockClient(
        make_dynamodb(endpoint_url, read_timeout=60), table_name, lease_duration=600, heartbeat_period=200
    ) as client:
        client.create_table()
    return table_name


def renewals(endpoint_url: str, rounds: int) -> list[tuple[str, ...]]:
    """Renewing a group's members: the heartbeat's UpdateItem per member, or one TransactWriteItems per 100."""
    client, counter = patient_client(endpoint_url, new_table(endpoint_url))
    group = client.acquire_many([unique("member") for _ in range(MEMBERS)])
    leases = list(group)
    one_by_one, one_by_one_s = measured(rounds, lambda: [lease.extend() for lease in leases], counter)

    def in_a_transaction() -> None:
        stamps = [Stamp.new(lease.owner_name, lease.lease_duration, time.time()) for lease in leases]
        requests = [
            writes.in_transaction(
                writes.renew(client.layout, lease.lock_id, stamp, holding=KeptAlive(lease.owner_name, versions[lease]))
            )
            for lease, stamp in zip(leases, stamps, strict=True)
        ]
        client.dynamodb.transact_write_items(TransactItems=requests)  # type: ignore[arg-type]
        versions.update({lease: (stamp.version,) for lease, stamp in zip(leases, stamps, strict=True)})

    versions = {lease: (lease.record_version_number or "",) for lease in leases}
    together, together_s = measured(rounds, in_a_transaction, counter)
    client.close(release=False)
    return [
        (f"{MEMBERS} members, one by one (chosen)", str(one_by_one), str(MEMBERS), f"{one_by_one_s * 1000:.0f}"),
        (f"{MEMBERS} members, one transaction", str(together), str(2 * MEMBERS), f"{together_s * 1000:.0f}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with endpoint() as endpoint_url:
        locking = lock_many(endpoint_url, args.rounds)
        renewing = renewals(endpoint_url, args.rounds)
    header = (
        "keys",
        "acquire_many + release: requests",
        "write / read units",
        "ms",
        "one by one: requests",
        "write / read units",
        "ms",
        "requests saved",
    )
    print_table(header, locking)
    print()
    print_table(("renewing a group", "requests per renewal", "write units", "ms"), renewing)


if __name__ == "__main__":
    main()
