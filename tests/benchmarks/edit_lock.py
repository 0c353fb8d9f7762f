"""The admin's edit locks: requests per page action, and how soon a closed or dead tab's lock is free.

    python -m tests.benchmarks.edit_lock [--rounds 20] [--closes 10] [--cut-offs 3] [--lease 3]

The first table drives the change page with Django's test client. The second
opens it in Debian's chromium (Playwright) and closes the tab, whose page
sends its release; or first cuts the tab off the network, as a crash or a lost
connection would, so that nothing arrives and the lock runs out one lease
after its last renewal. It times until another user's page would get the lock.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import django

from ..dynamodb_support import RequestCounter
from .protocol import print_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--closes", type=int, default=10)
    parser.add_argument("--cut-offs", type=int, default=3)
    parser.add_argument("--lease", type=float, default=3.0, help="EDIT_LEASE_DURATION for the run (seconds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        # A database file, which the live server's thread shares.
        os.environ["DYNALOCK_TEST_DATABASE"] = os.path.join(directory, "bench.sqlite3")
        run(args)


def run(args: argparse.Namespace) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API keeps an event loop in this thread
    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    from dynalock_django.testing import lock_table
    from testproject.desk.models import Customer

    setup_test_environment()  # responses carry their template context (the page's ticket)
    call_command("migrate", verbosity=0)
    alice = User.objects.create_superuser("alice", password="pw")
    bob = User.objects.create_superuser("bob", password="pw")
    customer = Customer.objects.create(name="Acme", plan="pro")
    with lock_table(EDIT_LEASE_DURATION=args.lease):
        print_table(("page action", "DynamoDB requests", "ms median", "ms max"), page_actions(alice, customer, args))
        print()
        print_table(
            ("the tab", "tries", "lock free after ms (median / max)", "x lease"),
            tab_endings(alice, bob, customer, args),
        )


def page_actions(alice: Any, customer: Any, args: argparse.Namespace) -> list[tuple[str, ...]]:
    from django.test import Client

    from dynalock_django.admin.edit_locking.tickets import HANDOFF_COOKIE, TICKET_FIELD
    from dynalock_django.client import get_client

    client = Client()
    client.force_login(alice)
    page_url = f"/admin/desk/customer/{customer.pk}/change/"
    lock_url = f"/admin/desk/customer/{customer.pk}/edit-lock/"
    counter = RequestCounter(get_client().dynamodb)
    state: dict[str, Any] = {}

    def open_page() -> None:
        client.cookies.pop(HANDOFF_COOKIE, None)
        state["ticket"] = client.get(page_url).context["dynalock"]["state"].ticket

    def release() -> None:
        assert client.post(f"{lock_url}release/", {"ticket": str(state["ticket"])}).status_code == 200

    def reload() -> None:
        client.cookies[HANDOFF_COOKIE] = str(state["ticket"])
        state["ticket"] = client.get(page_url).context["dynalock"]["state"].ticket

    def renew() -> None:
        assert client.post(f"{lock_url}renew/", {"ticket": str(state["ticket"])}).status_code == 200

    def save() -> None:
        form = {"name": "Acme", "plan": "pro", "_save": "1", TICKET_FIELD: str(state["ticket"])}
        for prefix in ("addresses", "notes"):
            form |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
        assert client.post(page_url, form).status_code == 302

    def status() -> None:
        assert client.get(f"{lock_url}status/").status_code == 200

    def new_customer() -> None:
        state["doomed"] = type(customer).objects.create(name="Doomed", plan="free")

    def delete() -> None:
        doomed_url = f"/admin/desk/customer/{state['doomed'].pk}/delete/"
        assert client.post(doomed_url, {"post": "yes"}).status_code == 302

    cases: list[tuple[str, Callable[[], None], Callable[[], None], Callable[[], None]]] = [
        # (action, what sets the page up before it, what cleans up after it)
        ("open the change page (takes the lock)", open_page, lambda: None, release),
        ("renew (every third of the lease)", renew, open_page, release),
        ("reload (the new page takes it over)", reload, open_page, release),
        ("status, from a read-only page", status, open_page, release),
        ("release, as the tab closes", release, open_page, lambda: None),
        ("save (checks the lock, writes, releases)", save, open_page, lambda: None),
        ("delete (takes the lock, deletes, releases)", delete, new_customer, lambda: None),
    ]
    rows = []
    for name, action, before, after in cases:
        times, made = [], collections.Counter[str]()
        for _ in range(args.rounds):
            before()
            calls = counter.calls.copy()
            started = time.perf_counter()
            action()
            times.append((time.perf_counter() - started) * 1000)
            made += counter.calls - calls
            after()
        requests = ", ".join(f"{count / args.rounds:g} {operation}" for operation, count in sorted(made.items()))
        rows.append((name, requests, f"{statistics.median(times):.1f}", f"{max(times):.1f}"))
    return rows


def tab_endings(alice: Any, bob: Any, customer: Any, args: argparse.Namespace) -> list[tuple[str, ...]]:
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.test import Client
    from django.test.testcases import LiveServerThread

    from dynalock_django.admin.edit_locking.object_locks import EditLock

    from ..django.browser import launch_chromium

    server = LiveServerThread("localhost", StaticFilesHandler)
    server.daemon = True
    server.start()
    server.is_ready.wait()
    base = f"http://localhost:{server.port}"
    sessions = {}
    for user in (alice, bob):
        client = Client()
        client.force_login(user)
        sessions[user.username] = client.cookies["sessionid"].value
    bobs_view = EditLock(customer, bob)

    def bob_would_get_it() -> bool:
        return bobs_view.is_free(bobs_view.read())

    rows = []
    try:
        with launch_chromium() as browser:
            endings = (("closed: the page sends its release", args.closes), ("cut off, then closed", args.cut_offs))
            for ending, tries in endings:
                waited = []
                for _ in range(tries):
                    context = browser.new_context()
                    context.add_cookies([{"name": "sessionid", "value": sessions["alice"], "url": base}])
                    page = context.new_page()
                    page.goto(f"{base}/admin/desk/customer/{customer.pk}/change/")
                    page.wait_for_timeout(args.lease * 1000 / 2)  # a renewal or so
                    assert not bob_would_get_it()
                    started = time.monotonic()
                    if ending.startswith("cut off"):
                        # Like a crash or a lost network: nothing more reaches the server from this tab.
                        context.set_offline(True)
                    page.close(run_before_unload=True)
                    while not bob_would_get_it():
                        time.sleep(0.02)
                    waited.append((time.monotonic() - started) * 1000)
                    context.close()
                rows.append(
                    (
                        ending,
                        str(tries),
                        f"{statistics.median(waited):.0f} / {max(waited):.0f}",
                        f"{statistics.median(waited) / 1000 / args.lease:.2f}",
                    )
                )
    finally:
        server.terminate()
    return rows


if __name__ == "__main__":
    main()
