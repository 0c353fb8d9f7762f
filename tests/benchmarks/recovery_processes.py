"""The processes of ``python -m tests.benchmarks.recovery``: waiters, holders, and the gunicorn holder's hooks.

Waiters and protocol holders are started with multiprocessing's spawn method; the Django holders are
real ``manage.py`` commands and a real gunicorn; every time is the machine's monotonic clock, which all
its processes share.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dynalock_django.dynamodb import LockClient

from ..dynamodb_support import REGION, make_dynamodb, short_lease_client


def client(endpoint_url: str, table_name: str, lease: float, max_clock_skew: float | None) -> LockClient:
    return short_lease_client(
        make_dynamodb(endpoint_url, read_timeout=lease / 4, connect_timeout=lease / 4),
        table_name,
        lease_duration=lease,
        heartbeat_period=lease / 4,
        refresh_period=lease / 10,
        max_clock_skew=max_clock_skew,
    )


def wait_and_report(
    endpoint_url: str, table_name: str, key: str, lease: float, max_clock_skew: float | None, times: Any, waiting: Any
) -> None:
    """Look at the lock, then wait for it; ``times`` gets (arrived, granted)."""
    with client(endpoint_url, table_name, lease, max_clock_skew) as waiter:
        arrived = time.monotonic()
        waiter.get(key)
        waiting.set()
        lease_ = waiter.acquire(key, timeout=20 * lease)
        times[0], times[1] = arrived, time.monotonic()
        lease_.release()


def standby_and_report(
    endpoint_url: str, table_name: str, key: str, lease: float, max_clock_skew: float | None, times: Any, waiting: Any
) -> None:
    """A standby ``dynalock run``: look at the lease, then run a command under it; ``times`` gets (arrived, started).

    ``started`` is when the command itself began, on the monotonic clock: the failover is complete then.
    """
    dynalock = {
        "TABLE_NAME": table_name,
        "ENDPOINT_URL": endpoint_url,
        "REGION_NAME": REGION,
        "LEASE_DURATION": lease,
        "HEARTBEAT_PERIOD": lease / 4,
        "REFRESH_PERIOD": lease / 10,
        "MAX_CLOCK_SKEW": max_clock_skew,
    }
    os.environ |= {"DJANGO_SETTINGS_MODULE": "tests.settings", "DYNALOCK_TEST_SETTINGS": json.dumps(dynalock)}
    import django

    django.setup()
    from dynalock_django.client import get_client
    from dynalock_django.leader import run_while_leader

    with tempfile.TemporaryDirectory() as directory:
        started = Path(directory) / "started"
        command = [sys.executable, "-c", f"import time; open({str(started)!r}, 'w').write(str(time.monotonic()))"]
        arrived = time.monotonic()
        get_client().get(key)
        waiting.set()
        if run_while_leader(key, command, timeout=20 * lease) != 0:
            raise RuntimeError("the standby's command failed")
        times[0], times[1] = arrived, float(started.read_text())


def hold(endpoint_url: str, table_name: str, key: str, lease: float, held: Any, end: Any) -> None:
    """Hold ``key`` until ``end`` is set (or the process is killed), then close the client, which releases."""
    with client(endpoint_url, table_name, lease, None) as holder:
        holder.acquire(key, timeout=20 * lease)
        held.set()
        end.wait(600)


def hold_and_release(endpoint_url: str, table_name: str, key: str, lease: float, held: Any, end: Any) -> None:
    """Hold ``key`` until ``end`` is set, then release it."""
    holder = client(endpoint_url, table_name, lease, None)
    lease_ = holder.acquire(key, timeout=20 * lease)
    held.set()
    end.wait(600)
    lease_.release()
    holder.close()


# The gunicorn holder: `gunicorn -c tests/benchmarks/recovery_processes.py tests.benchmarks.recovery_processes:app`.
# Its one worker takes the lock RECOVERY_LOCK_NAME through the Django layer once, and says so in RECOVERY_READY_FILE.
workers = 1


def post_worker_init(worker: Any) -> None:
    ready = Path(os.environ["RECOVERY_READY_FILE"])
    if ready.exists():
        return  # a worker started after the first one was stopped: the lock is not its to take
    import django

    django.setup()
    from dynalock_django import lock_key

    lock_key(os.environ["RECOVERY_LOCK_NAME"]).acquire()
    ready.write_text(str(os.getpid()))


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("204 No Content", [])
    return []
