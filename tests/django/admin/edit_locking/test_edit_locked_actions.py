"""Actions under the edit locks of all the selected objects, or not at all: "Delete selected" and edit_locked_action."""

from __future__ import annotations

import math

import pytest
from django.contrib.admin.utils import quote
from django.test import override_settings

from dynalock_django.client import get_client
from testproject.desk.admin import CustomerAdmin
from testproject.desk.models import Customer

from ....dynamodb_support import RequestCounter
from ...admin_support import DESK_EDITOR, PATIENT, browser, held, logged_in, with_token
from .test_admin_edit_lock import change_url, customer_form, edit_lock_url, stored

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

CHANGELIST = "/admin/desk/customer/"


def open_page(client, obj):
    page = client.get(f"/admin/desk/customer/{quote(obj.pk)}/change/")
    assert page.status_code == 200
    return page.context["dynalock"]["state"].ticket


def delete_selected(client, objects, *, confirmed=True):
    data = {"action": "delete_selected", "_selected_action": [obj.pk for obj in objects]}
    if confirmed:
        data["post"] = "yes"
    return client.post(CHANGELIST, with_token(data), follow=True)


def test_nothing_is_deleted_while_someone_else_edits_one_and_the_message_names_it(
    alice, bob, customer, django_capture_on_commit_callbacks
):
    others = [Customer.objects.create(name=f"Other {n}", plan="free") for n in range(3)]
    open_page(logged_in(alice), customer)
    with django_capture_on_commit_callbacks(execute=True):
        html = delete_selected(browser(bob), [*others, customer]).content.decode()
    assert "Acme: Being edited by alice since" in html
    assert "Nothing was deleted." in html
    assert "Other 0:" not in html  # only the row someone edits is named
    assert Customer.objects.count() == 4
    assert not any(held(other) for other in others)  # none kept: all or nothing


@pytest.mark.requires("transactions")
def test_deleting_150_rows_takes_their_locks_in_2_transactions(alice, dynalock, django_capture_on_commit_callbacks):
    # A full chunk of 100 and a part one.
    rows = Customer.objects.bulk_create(Customer(name=f"Customer {n:03}", plan="free") for n in range(150))
    client = browser(alice)
    # No renewal among the requests counted, however slow the machine: the first would come 200 s in.
    never_renewed = {**PATIENT, "LEASE_DURATION": 600.0, "HEARTBEAT_PERIOD": 200.0}
    with override_settings(DYNALOCK={**dynalock, **never_renewed}):
        requests_made = RequestCounter(get_client().dynamodb)
        with django_capture_on_commit_callbacks(execute=False) as release:
            deleted = delete_selected(client, rows)
        assert "Successfully deleted 150 customers." in deleted.content.decode()
        chunks = math.ceil(150 / 100)
        # Before: 150 UpdateItem to take the locks. The transactions return no values: a read per chunk
        # fetches the fencing tokens they wrote.
        assert dict(requests_made.calls) == {"TransactWriteItems": chunks, "BatchGetItem": chunks}
        assert not Customer.objects.exists()
        requests_made.reset()
        for callback in release:
            callback()
        assert dict(requests_made.calls) == {"TransactWriteItems": chunks}  # let go after the commit: was 150
        assert not any(held(row) for row in rows[::50])


def test_the_names_of_rows_someone_edits_are_escaped(alice, bob):
    evil = Customer.objects.create(name="<script>alert(1)</script>", plan="free")
    open_page(logged_in(alice), evil)
    html = delete_selected(browser(bob), [evil]).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;: Being edited by alice" in html
    assert "<script>alert(1)</script>" not in html
    assert Customer.objects.filter(pk=evil.pk).exists()


def test_rows_the_user_may_not_view_are_counted_not_named(alice, bob, customer, monkeypatch):
    secret = Customer.objects.create(name="Secret Corp", plan="enterprise")
    open_page(logged_in(alice), secret)
    open_page(logged_in(alice), customer)
    view = CustomerAdmin.has_view_permission
    monkeypatch.setattr(
        CustomerAdmin, "has_view_permission", lambda self, request, obj=None: obj != secret and view(self, request, obj)
    )
    response = delete_selected(browser(bob), [customer, secret])
    told = [str(message) for message in response.context["messages"]]
    assert told[0].startswith("Acme: Being edited by alice")
    assert told[1:] == ["1 other selected object is being edited.", "Nothing was deleted."]
    assert Customer.objects.count() == 2


def test_a_row_the_user_edits_in_another_tab_is_deleted_with_the_others(alice, customer):
    other = Customer.objects.create(name="Globex", plan="free")
    client = browser(alice)
    open_page(client, customer)  # her change page has not let go of its lock yet
    deleted = delete_selected(client, [customer, other])
    assert "Successfully deleted 2 customers." in deleted.content.decode()
    assert not Customer.objects.exists()


def test_the_confirmation_page_warns_and_a_post_without_csrf_deletes_nothing(alice, bob, customer):
    open_page(logged_in(alice), customer)
    confirmation = delete_selected(browser(bob), [customer], confirmed=False).content.decode()
    assert "Acme: Being edited by alice since" in confirmation
    forged = browser(bob).post(CHANGELIST, {"action": "delete_selected", "_selected_action": [customer.pk], "post": 1})
    assert forged.status_code == 403
    assert Customer.objects.filter(pk=customer.pk).exists()


def test_without_dynamodb_nothing_is_deleted(alice, customer, dynalock):
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "no-such-table"}):
        for confirmed in (False, True):  # the confirmation page, then the deletion
            html = delete_selected(browser(alice), [customer], confirmed=confirmed).content.decode()
            assert "Edit locks are unavailable" in html
            assert "Nothing was deleted." in html
    assert Customer.objects.filter(pk=customer.pk).exists()


def kept_for_bob(alice, bob, customer, capture_on_commit):
    """Bob asks while alice edits; alice saves: the lock is free, and kept for bob (test_ask_to_edit)."""
    alices = logged_in(alice)
    ticket = open_page(alices, customer)
    assert logged_in(bob).post(edit_lock_url(customer, "ask")).json()["state"] == "waiting"
    with capture_on_commit(execute=True):  # her save's release
        assert alices.post(change_url(customer), customer_form(ticket, name="Acme Corp")).status_code == 302
    assert stored(customer).is_released
    assert [waiter.name for waiter in stored(customer).waiters] == ["bob"]


@pytest.mark.parametrize("others", [0, 1])  # one object: the single write; two: the transaction
def test_delete_selected_leaves_a_lock_kept_for_a_waiter_to_the_waiter(
    alice, bob, make_staff, customer, others, django_capture_on_commit_callbacks
):
    kept_for_bob(alice, bob, customer, django_capture_on_commit_callbacks)
    carol = make_staff("carol", *DESK_EDITOR)
    selected = [customer, *(Customer.objects.create(name=f"Other {n}", plan="free") for n in range(others))]

    confirmation = delete_selected(browser(carol), selected, confirmed=False).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        deleted = delete_selected(browser(carol), selected).content.decode()

    for html in (confirmation, deleted):
        assert "Acme Corp: Nobody is editing this now: bob asked to edit first" in html
        assert "Nothing was deleted." in html
    assert Customer.objects.count() == 1 + others
    assert stored(customer).is_released
    assert not any(held(obj) for obj in selected)
    assert [waiter.name for waiter in stored(customer).waiters] == ["bob"]  # still his turn


def test_an_edit_locked_action_leaves_a_lock_kept_for_a_waiter_to_the_waiter(
    alice, bob, make_staff, customer, django_capture_on_commit_callbacks
):
    kept_for_bob(alice, bob, customer, django_capture_on_commit_callbacks)
    carol = make_staff("carol", *DESK_EDITOR)
    duplicate = Customer.objects.create(name="Acme Corp (2)", plan="free", email="acme@example.com")
    duplicate.notes.create(body="Called")
    merge = {"action": "merge_customers", "_selected_action": [customer.pk, duplicate.pk]}

    with django_capture_on_commit_callbacks(execute=True):
        html = browser(carol).post(CHANGELIST, with_token(merge), follow=True).content.decode()

    assert "Acme Corp: Nobody is editing this now: bob asked to edit first" in html
    assert "Nothing was changed." in html
    assert Customer.objects.count() == 2
    customer.refresh_from_db()
    assert customer.email == ""
    assert duplicate.notes.count() == 1
    assert not held(customer)
    assert not held(duplicate)
    assert [waiter.name for waiter in stored(customer).waiters] == ["bob"]
