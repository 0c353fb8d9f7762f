"""What the Django layer costs over the bare protocol client, per lock.

    python -m tests.benchmarks.django_layer [--rounds 300]

Each row: the same uncontended lock, taken and released ``rounds`` times, in
one run on one local endpoint; the ratio is to the bare LockClient row.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import django

from ..dynamodb_support import RequestCounter
from .protocol import per_call, print_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300)
    rounds = parser.parse_args().rounds
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from dynalock_django import fenced_save, lock_object
    from dynalock_django.client import get_client
    from dynalock_django.keys import key_for_instance
    from dynalock_django.testing import lock_table
    from tests.django.testapp.models import Account

    call_command("migrate", verbosity=0)
    with lock_table():
        account = Account.objects.create(name="bench")
        client = get_client()
        counter = RequestCounter(client.dynamodb)
        key = key_for_instance(account)

        def bare() -> None:
            with client.lock(key):
                pass

        def django_lock() -> None:
            with lock_object(account):
                pass

        def in_atomic() -> None:
            with transaction.atomic(), lock_object(account):
                pass

        def with_fenced_save() -> None:
            with transaction.atomic(), lock_object(account) as lease:
                fenced_save(account, lease, update_fields=["balance"])

        cases: list[tuple[str, Callable[[], None]]] = [
            ("bare LockClient.lock()", bare),
            ("lock_object()", django_lock),
            ("lock_object() in atomic()", in_atomic),
            ("lock_object() in atomic() + fenced_save()", with_fenced_save),
        ]
        for _, run in cases:  # warm up: connections, imports
            run()
        results = [(name, *_median_and_requests(run, rounds, counter)) for name, run in cases]
    base = results[0][1]
    rows = [
        (name, requests, f"{median:.2f}", f"{median / base:.2f}x", f"{median - base:+.2f}")
        for name, median, requests in results
    ]
    print_table(("per lock", "DynamoDB requests", "ms median", "vs bare", "ms over bare"), rows)


def _median_and_requests(run: Callable[[], None], rounds: int, counter: Any) -> tuple[float, str]:
    median, _, requests = per_call(rounds, run, counter)
    return median, requests


if __name__ == "__main__":
    main()
