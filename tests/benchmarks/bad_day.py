"""A bad day at DynamoDB: each call's worst time on an endpoint that never answers, the admin's pages with
the circuit breaker closed and open, and the size of requests while answers are lost.

    python -m tests.benchmarks.bad_day [--rounds 2] [--lost 50]

Everything goes through the fault proxy (tests/chaos/proxy.py) in front of the local endpoint, with the
recommended botocore config (connect 1 s, read 2 s, 3 attempts). ``hang`` makes the proxy accept every
request and answer none: the worst case, where every attempt waits out its read time-out. A call's bound
is its timeout plus one read time-out (docs/operations.md); the first table shows each call's worst time
over ``rounds`` tries against it, with the breaker off (the deadline alone), then with the breaker open.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import django

from ..chaos.proxy import FaultProxy, FaultRates
from ..dynamodb_limits import LimitGuard, install
from ..dynamodb_support import unique
from ..stores import shared_endpoint_url
from .protocol import print_table

READ_TIMEOUT = 2.0
RECOMMENDED = {
    "connect_timeout": 1,
    "read_timeout": READ_TIMEOUT,
    "retries": {"mode": "standard", "total_max_attempts": 3},
}
HUNG = 3600.0  # seconds: longer than any run; hang(0) ends it
# Each key's condition names at most MAX_UNANSWERED lost versions, each under this many bytes (quoted,
# with its placeholder): the bound of the third table, as in tests/dynamodb/aws/test_bad_day.py.
BYTES_PER_LOST_VERSION = 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="tries per call on the hung endpoint (the worst shown)")
    parser.add_argument("--lost", type=int, default=50, help="answers lost in the request-size table")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    setup_test_environment()  # the test client's host
    logging.getLogger("dynalock_django").setLevel(logging.CRITICAL)  # each failure's log line: the run's whole point
    call_command("migrate", verbosity=0)
    limits = LimitGuard()
    undo = install(limits)  # every request of the run checked against DynamoDB's documented limits
    try:
        with FaultProxy(shared_endpoint_url(), FaultRates(), seed=21) as proxy:
            print_table(
                (
                    "call",
                    "timeout s",
                    "bound s",
                    f"worst of {args.rounds} s",
                    "of bound",
                    "breaker open ms",
                    "requests sent while open",
                ),
                calls(proxy, args.rounds),
            )
            print()
            print_table(
                ("admin page", "answering ms", "hung, no breaker ms", "hung, breaker open ms", "sent while open"),
                admin_pages(proxy),
            )
            print()
            print_table(
                (
                    "call",
                    "answers lost of",
                    "lost",
                    "transactions",
                    "calls / acquired",
                    "first bytes",
                    "largest bytes",
                    "bound bytes",
                    "reads",
                    "s",
                ),
                lost_answers(proxy, args.lost),
            )
    finally:
        undo()
    breaches = limits.take()
    print(f"\nRequests past DynamoDB's limits: {len(breaches)}", *breaches[:5], sep="\n")


@contextmanager
def through(proxy: FaultProxy, **settings: Any) -> Iterator[None]:
    """DYNALOCK on a new table behind ``proxy``, with the recommended botocore config unless ``settings`` say.

    The table is made and deleted on the endpoint itself, patiently: a loaded machine's slow answer
    there is not what the run measures.
    """
    from django.test import override_settings

    from dynalock_django.testing import lock_table

    patient = {"connect_timeout": 1, "read_timeout": 10, "retries": {"total_max_attempts": 1}}
    with lock_table(ENDPOINT_URL=shared_endpoint_url(), BOTO_CONFIG=patient) as dynalock:
        settings.setdefault("BOTO_CONFIG", RECOMMENDED)
        with override_settings(DYNALOCK={**dynalock, "ENDPOINT_URL": proxy.url, **settings}):
            try:
                yield
            finally:
                proxy.hang(0)


def cases() -> list[tuple[str, float, Callable[[], Any]]]:
    """(call, its timeout, the call): each raises on a hung endpoint."""
    from dynalock_django import Leadership, lock_object, lock_objects
    from dynalock_django.client import get_client
    from tests.django.testapp.models import Account

    accounts = [Account.objects.create(name=unique("bench")) for _ in range(3)]

    def many() -> Any:
        return get_client().acquire_many([unique() for _ in range(3)], timeout=5)

    async def in_async_with() -> None:
        async with lock_object(accounts[0], timeout=5):
            pass

    def locked_objects() -> None:
        with lock_objects(Account.objects.filter(pk__in=[a.pk for a in accounts]), timeout=5):
            pass

    def locked_object() -> None:
        with lock_object(accounts[0], timeout=5):
            pass

    return [
        ("try_acquire(key)", 0.0, lambda: get_client().try_acquire(unique())),
        ("acquire(key, timeout=0)", 0.0, lambda: get_client().acquire(unique(), timeout=0)),
        ("acquire(key, timeout=5)", 5.0, lambda: get_client().acquire(unique(), timeout=5)),
        ("acquire_many(3 keys, timeout=5)", 5.0, many),
        ("aacquire(key, timeout=5)", 5.0, lambda: asyncio.run(get_client().aacquire(unique(), timeout=5))),
        ("with lock_object(obj, timeout=5)", 5.0, locked_object),
        ("async with lock_object(obj, timeout=5)", 5.0, lambda: asyncio.run(in_async_with())),
        ("with lock_objects(3 rows, timeout=5)", 5.0, locked_objects),
        ("Leadership(name, timeout=5)", 5.0, lambda: Leadership(unique("leader"), timeout=5).acquire()),
    ]


def calls(proxy: FaultProxy, rounds: int) -> list[tuple[str, ...]]:
    chosen = cases()
    worst: dict[str, float] = {}
    with through(proxy, BREAKER_THRESHOLD=None):  # the deadline alone
        proxy.hang(HUNG)
        for name, _, call in chosen * rounds:
            worst[name] = max(worst.get(name, 0.0), failing_call(call))
    open_times: dict[str, tuple[float, int]] = {}
    with through(proxy, BREAKER_THRESHOLD=3, BREAKER_COOL_DOWN=HUNG):
        proxy.hang(HUNG)
        trip_the_breaker()
        for name, _, call in chosen:
            sent = requests_sent(proxy)
            open_times[name] = (failing_call(call), requests_sent(proxy) - sent)
    rows = []
    for name, timeout, _ in chosen:
        bound = timeout + READ_TIMEOUT
        seconds, sent = open_times[name]
        rows.append(
            (
                name,
                f"{timeout:g}",
                f"{bound:g}",
                f"{worst[name]:.2f}",
                f"{worst[name] / bound:.2f}",
                f"{seconds * 1000:.1f}",
                str(sent),
            )
        )
    return rows


def trip_the_breaker() -> None:
    """Reads that get no answer, until the breaker opens (reads: no unanswered write to clean up later)."""
    from dynalock_django.client import get_client

    client = get_client()
    while not client.breaker.is_open:
        failing_call(lambda: client.get(unique()))


def failing_call(call: Callable[[], Any]) -> float:
    """Seconds until ``call`` raised (it must: the endpoint does not answer)."""
    from dynalock_django.dynamodb import DynamoDBUnavailable

    started = time.monotonic()
    try:
        call()
    except DynamoDBUnavailable:
        return time.monotonic() - started
    raise AssertionError("a call succeeded on an endpoint that does not answer")


def requests_sent(proxy: FaultProxy) -> int:
    return sum(map(len, proxy.request_sizes.values()))


def admin_pages(proxy: FaultProxy) -> list[tuple[str, ...]]:
    from django.contrib.auth.models import User
    from django.test import Client

    from testproject.desk.models import Customer

    customers = [Customer.objects.create(name=f"Customer {i}", plan="pro") for i in range(20)]
    admin = User.objects.create_superuser(unique("admin"), password="pw")
    pages = [
        ("change page", f"/admin/desk/customer/{customers[0].pk}/change/"),
        ("changelist (20 rows)", "/admin/desk/customer/"),
        ("live-locks page", "/admin/dynalock_django/lock/"),
    ]
    client = Client()
    client.force_login(admin)
    answering: dict[str, float] = {}
    hung: dict[str, float] = {}
    opened: dict[str, float] = {}
    sent_while_open: dict[str, int] = {}
    with through(proxy, BREAKER_THRESHOLD=None):
        for name, url in pages:
            page(client, url)  # warm up
            answering[name] = statistics.median(page(client, url) for _ in range(5))
        proxy.hang(HUNG)
        for name, url in pages:
            hung[name] = page(client, url)
    with through(proxy, BREAKER_THRESHOLD=3, BREAKER_COOL_DOWN=HUNG):
        proxy.hang(HUNG)
        trip_the_breaker()
        for name, url in pages:
            sent = requests_sent(proxy)
            opened[name] = statistics.median(page(client, url) for _ in range(5))
            sent_while_open[name] = requests_sent(proxy) - sent
    return [
        (name, f"{answering[name]:.0f}", f"{hung[name]:.0f}", f"{opened[name]:.0f}", str(sent_while_open[name]))
        for name, _ in pages
    ]


def page(client: Any, url: str) -> float:
    """Milliseconds to answer ``url``: a page, whatever it says (a 503 is an answer)."""
    started = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code in (200, 503), f"{url}: {response.status_code}"
    return elapsed


def lost_answers(proxy: FaultProxy, lost: int) -> list[tuple[str, ...]]:
    """``acquire_many`` while its transactions land and their answers never come back, until ``lost`` were lost.

    Either only the transactions' answers are lost (past MAX_UNANSWERED lost versions a key is read, which
    resolves them), or every answer is (each call ends at its deadline). A call never acquires: its last
    write is never answered.
    """
    from dynalock_django.client import get_client
    from dynalock_django.dynamodb import DynalockError
    from dynalock_django.dynamodb.acquiring.plan import MAX_UNANSWERED

    rows = []
    one_attempt = {**RECOMMENDED, "retries": {"mode": "standard", "total_max_attempts": 1}}
    for size, lost_of in ((3, ("TransactWriteItems",)), (50, ("TransactWriteItems",)), (50, ())):
        with through(proxy, BREAKER_THRESHOLD=None, BOTO_CONFIG=one_attempt):
            proxy.request_sizes.clear()
            proxy.rates = FaultRates(lost_transaction=1.0) if lost_of else FaultRates(lost_response=1.0)

            def answers_lost(lost_of: tuple[str, ...] = lost_of) -> int:
                return sum(len(sizes) for name, sizes in proxy.request_sizes.items() if not lost_of or name in lost_of)

            started, calls, acquired = time.monotonic(), 0, 0
            try:
                while answers_lost() < lost:
                    calls += 1
                    try:
                        # New keys each call: the keys a resolved call found ours stay so (their releases are lost too)
                        get_client().acquire_many([unique() for _ in range(size)], timeout=15)
                        acquired += 1
                    except DynalockError:
                        pass
            finally:
                proxy.rates = FaultRates()
            elapsed = time.monotonic() - started
            sizes = proxy.request_sizes["TransactWriteItems"]
            bound = sizes[0] + size * MAX_UNANSWERED * BYTES_PER_LOST_VERSION
            rows.append(
                (
                    f"acquire_many({size} keys, timeout=15)",
                    "transactions'" if lost_of else "every request's",
                    str(answers_lost()),
                    f"{len(sizes)}",
                    f"{calls} / {acquired}",
                    f"{sizes[0]:,}",
                    f"{max(sizes):,}",
                    f"{bound:,}",
                    str(len(proxy.request_sizes["BatchGetItem"]) + len(proxy.request_sizes["GetItem"])),
                    f"{elapsed:.1f}",
                )
            )
    return rows


if __name__ == "__main__":
    main()
