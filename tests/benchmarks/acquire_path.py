"""Modules an uncontended acquire passes through: how wide the engine's path is, not how fast.

    python -m tests.benchmarks.acquire_path

Each row: one acquire of a free lock (after a warm-up acquire and release of another key, so
first-call imports do not count), traced with ``sys.setprofile``: the package's modules whose
Python functions ran during the call, then every module's (botocore, moto's in-process store).
The release is not counted. The store is the in-process one (``locks_in_memory``), whose two
modules (``aws/in_memory*.py``) a real store's path does not pass; OpenTelemetry's API, when
installed, adds ``telemetry.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import django

from .protocol import print_table

PACKAGE = Path(__file__).resolve().parents[2] / "dynalock_django"


def modules_called(call: Callable[[], Any]) -> tuple[set[str], set[str]]:
    """The package's modules (paths relative to it) and all source files whose Python functions ``call`` ran."""
    files: set[str] = set()

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call":
            files.add(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    result.release()
    ours = {str(Path(name).relative_to(PACKAGE)) for name in files if Path(name).is_relative_to(PACKAGE)}
    return ours, files


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from django.core.management import call_command

    from dynalock_django import lock_object
    from dynalock_django.testing import locks_in_memory
    from tests.django.testapp.models import Account, Ticket

    call_command("migrate", verbosity=0)
    rows = []
    with locks_in_memory() as memory:
        client = memory.client
        client.acquire("warm-up").release()
        lock_object(Account.objects.create(name="warm-up")).acquire().release()
        ticket = Ticket.objects.create(title="path")  # a row of a model without readers, its first lock
        cases: list[tuple[str, Callable[[], Any]]] = [
            ("LockClient.acquire(key)", lambda: client.acquire("acquire-path")),
            ("lock_object(row).acquire()", lambda: lock_object(ticket).acquire()),
        ]
        for name, call in cases:
            ours, every = modules_called(call)
            protocol = sorted(module for module in ours if module.startswith("dynamodb/"))
            rows.append((name, str(len(ours)), str(len(protocol)), str(len(every))))
            print(f"{name}: {', '.join(sorted(ours))}", file=sys.stderr)
    print_table(("acquire", "dynalock_django modules", "of them dynamodb/", "all source files"), rows)


if __name__ == "__main__":
    main()
