"""A process that writes an Account row under a lock, for the fencing tests.

    python -m tests.django.fencing_worker ACCOUNT_PK VALUE [--unfenced] [--wait-for-go]

Prints ``HOLDING <token>`` once it holds the lock (and has claimed the row),
then, after reading ``go`` on stdin if asked, writes the balance and prints
``WROTE`` or ``STALE <stored token>``. Settings come from the environment.
"""

from __future__ import annotations

import argparse
import os
import sys

import django


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pk", type=int)
    parser.add_argument("value", type=int)
    parser.add_argument("--unfenced", action="store_true")
    parser.add_argument("--wait-for-go", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()

    from dynalock_django import lock_model
    from dynalock_django.exceptions import StaleFencingToken
    from dynalock_django.fencing import fenced_refresh, fenced_save
    from tests.django.testapp.models import Account

    lock = lock_model(Account, args.pk, timeout=30)
    lease = lock.acquire()
    account = Account.objects.get(pk=args.pk)
    fenced_refresh(account, lease)
    print(f"HOLDING {lease.fencing_token}", flush=True)
    if args.wait_for_go:
        sys.stdin.readline()
    account.balance = args.value
    try:
        if args.unfenced:
            account.save(update_fields=["balance"])
        else:
            # With its token, not its lease: a pause can fall after the lease's local check (which would
            # refuse a lease known lost) and before the UPDATE; only the row's token stops that write.
            fenced_save(account, lease.fencing_token, update_fields=["balance"])
        print("WROTE", flush=True)
    except StaleFencingToken as stale:
        print(f"STALE {stale.stored_token}", flush=True)
    lock.release(best_effort=True)


if __name__ == "__main__":
    main()
