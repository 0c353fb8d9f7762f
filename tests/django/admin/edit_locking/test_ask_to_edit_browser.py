"""Asking to edit in a real browser: alice edits, bob then carol ask; each gets the page by itself at their turn."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ...browser import PAGE_PATIENCE_MS
from ..test_admin_browser import (  # noqa: F401 (fixtures, and helpers)
    _database_before_live_server,
    banner,
    change_url,
    chromium,
    customer,
    edit_locks,
    lock_of,
    screenshot,
    staff_page,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.uses_dynalock]


def edit_lock_requests(page: Any) -> list[str]:
    """The edit-lock endpoints ``page`` calls from now on, by action (renew, ask, wait, status ...)."""
    seen: list[str] = []
    page.on(
        "request",
        lambda request: (
            seen.append(request.url.rstrip("/").rsplit("/", 1)[-1]) if "/edit-lock/" in request.url else None
        ),
    )
    return seen


def bob_in_line_behind_alice(open_page: Any, live_server: Any, the_customer: Any) -> tuple[Any, Any]:
    """Alice's and Bob's pages of the customer: Alice edits, Bob has asked and is next in line."""
    alice, bob = open_page("alice"), open_page("bob")
    url = change_url(live_server, the_customer)
    alice.goto(url)
    bob.goto(url)
    bob.click("#dynalock-ask")
    banner(bob).get_by_text("You are next").wait_for(timeout=PAGE_PATIENCE_MS)
    assert [waiter.name for waiter in lock_of(the_customer).waiters] == ["bob"]
    return alice, bob


def editing(page: Any, timeout: float) -> float:
    """Seconds until ``page`` turned into the editing page by itself (no click)."""
    started = time.monotonic()
    page.locator("input[name=_save]").wait_for(timeout=timeout * 1000)
    return time.monotonic() - started


def test_bob_then_carol_ask_and_each_gets_the_page_by_itself_at_their_turn(staff_page, live_server, customer):  # noqa: F811
    alice, bob, carol = staff_page("alice"), staff_page("bob"), staff_page("carol")
    url = change_url(live_server, customer)
    alice.goto(url)
    alices_requests = edit_lock_requests(alice)
    for waiter in (bob, carol):
        waiter.goto(url)
        assert waiter.locator("input[name=_save]").count() == 0  # read-only
        requests = edit_lock_requests(waiter)
        if waiter is bob:
            screenshot(bob, "ask-to-edit")
        waiter.click("#dynalock-ask")
        banner(waiter).get_by_text("this page switches to editing by itself").wait_for(timeout=PAGE_PATIENCE_MS)
        assert requests.count("ask") == 1  # asking is one request
        assert waiter.locator("#dynalock-ask").count() == 0
    assert "You are next" in banner(bob).inner_text()
    assert "You are in line after bob" in banner(carol).inner_text()

    # Alice's page is told by its renewals and its looks between them (test_holder_told_browser: within seconds).
    banner(alice).get_by_text("Then: carol.").wait_for(timeout=PAGE_PATIENCE_MS)
    assert "bob is waiting to edit since" in banner(alice).inner_text()
    assert set(alices_requests) <= {"renew", "check"}  # no other request told her
    screenshot(alice, "ask-holder-told")
    screenshot(carol, "ask-waiting")

    alice.fill("input[name=name]", "Acme Corp.")
    alice.click("input[name=_save]")
    alice.wait_for_url("**/admin/desk/customer/")
    assert editing(bob, timeout=10) < 5  # bob's page switched to editing by itself, within seconds
    assert lock_of(customer).owner_name.startswith("django-user:")
    assert [waiter.name for waiter in lock_of(customer).waiters] == ["carol"]
    banner(carol).get_by_text("You are next").wait_for(timeout=PAGE_PATIENCE_MS)
    assert carol.locator("input[name=_save]").count() == 0  # carol still waits
    banner(bob).get_by_text("carol is waiting to edit since").wait_for(timeout=PAGE_PATIENCE_MS)
    screenshot(bob, "ask-turn-editing")

    bob.goto(f"{live_server.url}/admin/desk/customer/")  # bob leaves without saving
    assert editing(carol, timeout=10) < 5
    assert lock_of(customer).waiters == ()
    carol.fill("input[name=name]", "Acme Corporation")
    carol.click("input[name=_save]")
    carol.wait_for_url("**/admin/desk/customer/")
    customer.refresh_from_db()
    assert customer.name == "Acme Corporation"


def test_a_waiter_who_closes_the_page_drops_out_of_the_line(staff_page, live_server, customer):  # noqa: F811
    _, bob = bob_in_line_behind_alice(staff_page, live_server, customer)

    bob.close()

    deadline = time.monotonic() + 5
    while lock_of(customer).waiters and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock_of(customer).waiters == ()
