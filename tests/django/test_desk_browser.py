# ruff: noqa: F811 (the fixtures imported from test_admin_browser)
"""The demo's desk pages in a real browser: never a 500, and a typed note is never lost.

A colleague holds the customer by having it open in the admin (bob's tab, on
the same server as in the demo); DynamoDB stops answering by a hang of the
in-process store behind the process's client. Each page answers 423 or its
own message, with the note still in its box.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.test import override_settings

from dynalock_django.client import build_client, client_replaced_by
from dynalock_django.dynamodb import InMemoryDynamoDB, RetryBudgetWarning
from testproject.desk import views
from testproject.desk.models import Customer

from .admin.test_admin_browser import (  # noqa: F401 (fixtures, and helpers)
    _database_before_live_server,
    banner,
    change_url,
    chromium,
    customer,
    edit_locks,
    lock_of,
    staff_page,
)
from .browser import PAGE_PATIENCE_MS

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.uses_dynalock]

NOTE = "Called about the invoice: <b>wants it resent</b>"


@pytest.fixture
def short_note_wait(monkeypatch: pytest.MonkeyPatch) -> float:
    """Add note waits a second for the colleague, not the demo's five: what it answers after is the same."""
    monkeypatch.setattr(views, "NOTE_WAIT_SECONDS", 1.0)
    return 1.0


@pytest.fixture
def patient_edit_lease(customer: Customer) -> Iterator[None]:
    """bob's admin tab keeps the customer with the default minute-long edit lease: a renewal late on a loaded
    machine does not let the lock lapse in the middle of the test."""
    with override_settings(DYNALOCK={**settings.DYNALOCK, "EDIT_LEASE_DURATION": 60.0}):
        yield


@pytest.fixture
def lock_store(customer: Customer) -> Iterator[InMemoryDynamoDB]:
    """The process's client (every page's) on an in-process store whose faults the test switches on.

    The store reaches the lock table the test's settings name (the process has one in-memory backend).
    """
    lock_store = InMemoryDynamoDB(connect_timeout=0.25, read_timeout=0.5, retries={"total_max_attempts": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetryBudgetWarning)  # the suite's tight time-outs, on purpose
        client = build_client(lock_store.client)
    with client_replaced_by(client):
        yield lock_store
    lock_store.faults.heal()
    client.close()


def desk_url(live_server: Any, customer: Customer) -> str:
    return f"{live_server.url}/customers/{customer.pk}/"


def add_note(page: Any, text: str) -> Any:
    """Type ``text`` in the note box and click Add note: the response of the page that answered."""
    page.fill("textarea[name=body]", text)
    with page.expect_navigation(timeout=PAGE_PATIENCE_MS) as navigation:
        page.get_by_role("button", name="Add note").click()
    return navigation.value


def test_add_note_while_bob_has_the_customer_open_in_the_admin_is_423_and_keeps_the_note(
    staff_page, live_server, customer, short_note_wait, patient_edit_lease
):
    alice, bob = staff_page("alice"), staff_page("bob")
    bob.goto(change_url(live_server, customer))
    assert bob.locator("input[name=_save]").is_visible()  # bob edits: he holds the customer's lock
    assert not lock_of(customer).is_released

    opened = alice.goto(desk_url(live_server, customer))
    assert opened.status == 200
    holder = alice.locator(".holder").inner_text()
    assert "Locked by bob" in holder
    assert "Save is refused until they are done; Add note waits up to 1 second for them." in holder

    with alice.expect_navigation(timeout=PAGE_PATIENCE_MS) as navigation:
        alice.get_by_role("button", name="Save").click()
    assert navigation.value.status == 423  # Save is refused at once, as the page said
    alice.go_back()

    answered = add_note(alice, NOTE)
    assert answered.status == 423
    notice = alice.locator(".notice").inner_text()
    assert "bob is still working on Acme Corporation: your note was not added yet" in notice
    assert alice.locator("textarea[name=body]").input_value() == NOTE  # kept, as typed
    assert not customer.notes.exists()

    bob.click("input[name=_save]")  # bob is done: the note goes in on the next try, from the box it was kept in
    bob.wait_for_url("**/admin/desk/customer/")
    with alice.expect_navigation(timeout=PAGE_PATIENCE_MS) as navigation:
        alice.get_by_role("button", name="Add note").click()
    assert navigation.value.status == 200
    assert customer.notes.get().body == NOTE


def test_the_desk_pages_while_dynamodb_does_not_answer_say_so_and_keep_the_note(
    staff_page, live_server, customer, lock_store
):
    alice = staff_page("alice")
    assert alice.goto(desk_url(live_server, customer)).status == 200
    lock_store.faults.hang()

    answered = add_note(alice, NOTE)
    assert answered.status == 503
    notice = alice.locator(".notice").inner_text()
    assert "The lock service is not answering" in notice
    assert "Your note was not added: it is kept below." in notice
    assert alice.locator("textarea[name=body]").input_value() == NOTE

    for _ in range(3):  # a hang, then the circuit breaker's refusals: the same answer
        assert add_note(alice, NOTE).status == 503
        assert alice.locator("textarea[name=body]").input_value() == NOTE

    content_type = ContentType.objects.get_for_model(Customer)
    view_on_site = alice.goto(f"{live_server.url}/admin/r/{content_type.pk}/{customer.pk}/")  # the admin's link
    assert view_on_site.status == 200
    assert alice.url == desk_url(live_server, customer)
    assert "nothing can be saved here for now" in alice.locator(".notice").inner_text()
    assert alice.get_by_role("button", name="Save").is_disabled()  # read-only: nothing to save with
    assert alice.locator("input[name=name]").is_disabled()
    assert alice.locator("input[name=name]").input_value() == "Acme Corporation"
    assert not customer.notes.exists()

    lock_store.faults.heal()
