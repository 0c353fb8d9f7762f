"""Locking many rows: ``lock_objects`` (all at once) against one ``lock_object`` after another, in one run.

    python -m tests.benchmarks.many_objects [--rounds 3] [--sizes 1 10 100 250]

Each row: the same free rows locked and released ``rounds`` times, on one
local endpoint (moto, one request at a time): requests per round by
operation, and the median wall time. On a store without transactions the
protocol locks the keys one by one instead (see docs/protocol.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable

import django

from ..dynamodb_support import RequestCounter
from .protocol import per_call, print_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 250])
    options = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from django.core.management import call_command

    from dynalock_django import lock_object, lock_objects
    from dynalock_django.client import get_client
    from dynalock_django.testing import lock_table
    from tests.django.testapp.models import Account

    call_command("migrate", verbosity=0)
    # moto takes seconds over a transaction of 100 writes: patient reads, and no heartbeat within a round.
    patient = {
        "LEASE_DURATION": 120.0,
        "HEARTBEAT_PERIOD": 40.0,
        "BOTO_CONFIG": {"connect_timeout": 1, "read_timeout": 30, "retries": {"total_max_attempts": 1}},
    }
    rows: list[tuple[str, ...]] = []
    with lock_table(**patient):
        counter = RequestCounter(get_client().dynamodb)
        for size in options.sizes:
            accounts = Account.objects.bulk_create(Account(name=f"bench {n}") for n in range(size))

            def all_at_once(accounts: list[Account] = accounts) -> None:
                with lock_objects(*accounts):
                    pass

            def one_after_another(accounts: list[Account] = accounts) -> None:
                with contextlib.ExitStack() as held:
                    for account in accounts:
                        held.enter_context(lock_object(account))

            cases: list[tuple[str, Callable[[], None]]] = [
                ("lock_objects()", all_at_once),
                ("lock_object() each", one_after_another),
            ]
            for name, run in cases:
                median, _, requests = per_call(options.rounds, run, counter)
                rows.append((str(size), name, requests, f"{median:.0f}"))
            Account.objects.filter(pk__in=[account.pk for account in accounts]).delete()
    print_table(("rows", "how", "DynamoDB requests per round", "ms median"), rows)


if __name__ == "__main__":
    main()
