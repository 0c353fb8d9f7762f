"""How long the admin's live-locks page takes to render, by the number of locks in the table.

    python -m tests.benchmarks.live_locks [--sizes 10 1000 10000]

A page reads ``LiveLocksAdmin.list_per_page`` (100) items with one Scan request, so
the first page should not grow with the table; walking every page does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from typing import Any

import django

from .protocol import print_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 10_000])
    sizes = parser.parse_args().sizes
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from dynalock_django.client import get_client
    from dynalock_django.testing import lock_table
    from testproject.desk.models import Customer

    setup_test_environment()  # so responses carry their template context (the next-page cursor)
    call_command("migrate", verbosity=0)
    customers = [Customer.objects.create(name=f"Customer {i}", plan="pro") for i in range(50)]
    admin = User.objects.create_superuser("admin", password="pw")
    rows = []
    for size in sizes:
        with lock_table():
            fill(get_client(), size, [c.pk for c in customers])
            client = Client()
            client.force_login(admin)
            first = [timed(client, {}) for _ in range(5)]
            pages, walk_started, params = 0, time.perf_counter(), {}
            while True:
                response = client.get("/admin/dynalock_django/lock/", params)
                pages += 1
                cursor = response.context["page"].next_cursor
                if cursor is None:
                    break
                params = {"cursor": cursor}
            walk = (time.perf_counter() - walk_started) * 1000
            rows.append((f"{size:,}", f"{statistics.median(first):.1f}", str(pages), f"{walk:.0f}"))
    print_table(("locks in table", "first page ms (median of 5)", "pages of 100", "all pages ms"), rows)


def timed(client: Any, params: dict[str, str]) -> float:
    started = time.perf_counter()
    assert client.get("/admin/dynalock_django/lock/", params).status_code == 200
    return (time.perf_counter() - started) * 1000


def fill(client: Any, size: int, customer_pks: list[int]) -> None:
    """Live-looking lock items, written 25 at a time (BatchWriteItem), half on customer rows."""
    from dynalock_django.payload import LockData

    now_ms = int(time.time() * 1000)
    items = []
    for i in range(size):
        key = f"desk.customer:{customer_pks[i % len(customer_pks)]}" if i % 2 else f"job-{i}"
        if i % 2 and i >= 2 * len(customer_pks):
            key = f"job-{i}"  # one lock per customer row
        data = LockData(purpose="edit", username=f"user{i % 7}").to_bytes()
        items.append(
            {
                "key": {"S": key},
                "liveLockKey": {"S": key},  # held, as our clients mark a held lock: in the live-locks index
                "ownerName": {"S": f"host:{i}"},
                "leaseDuration": {"S": "20000"},
                "recordVersionNumber": {"S": str(uuid.uuid4())},
                "fencingToken": {"N": str(now_ms + i)},
                "acquiredAt": {"N": str(now_ms)},
                "renewedAt": {"N": str(now_ms)},
                "data": {"B": data},
            }
        )
    for start in range(0, len(items), 25):
        batch = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        client.dynamodb.batch_write_item(RequestItems={client.table_name: batch})


if __name__ == "__main__":
    main()
