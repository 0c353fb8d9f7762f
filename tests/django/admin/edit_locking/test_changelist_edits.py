"""Changelist writes of an EditLockMixin admin respect edit locks: list_editable rows and modifying actions."""

from __future__ import annotations

import pytest
from django.db.models import F

from dynalock_django.admin.edit_locking.tickets import TICKET_FIELD
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance

from ...admin_support import browser, with_token
from ...testapp.admin import TicketAdmin
from ...testapp.models import Tag, Ticket

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

EDITOR = [f"{action}_{model}" for model in ("tag", "ticket") for action in ("view", "change", "add", "delete")]


@pytest.fixture
def alice(make_staff):
    return make_staff("alice", *EDITOR)


@pytest.fixture
def bob(make_staff):
    return make_staff("bob", *EDITOR)


@pytest.fixture
def tags():
    return Tag.objects.create(slug="red", label="Red"), Tag.objects.create(slug="blue", label="Blue")


def edit_in_list(client, url, pk_name, field, rows):
    """POST the changelist's list_editable form with ``rows`` ({pk: new value})."""
    data = {"form-TOTAL_FORMS": len(rows), "form-INITIAL_FORMS": len(rows), "_save": "Save"}
    for index, (pk, value) in enumerate(rows.items()):
        data |= {f"form-{index}-{pk_name}": str(pk), f"form-{index}-{field}": value}
    return client.post(url, with_token(data), follow=True)


def open_change_page(client, obj):
    page = client.get(f"/admin/testapp/{obj._meta.model_name}/{obj.pk}/change/")
    return page.context["dynalock"]["state"].ticket


def test_a_row_someone_edits_is_refused_and_the_others_are_saved(alice, bob, tags, django_capture_on_commit_callbacks):
    red, blue = tags
    alices = browser(alice)
    ticket = open_change_page(alices, red)

    with django_capture_on_commit_callbacks(execute=True):
        response = edit_in_list(browser(bob), "/admin/testapp/tag/", "slug", "label", {"red": "Bob's", "blue": "Bob's"})

    html = response.content.decode()
    assert "Red was not changed: Being edited by alice since" in html
    red.refresh_from_db()
    blue.refresh_from_db()
    assert (red.label, blue.label) == ("Red", "Bob's")
    assert get_client().get(key_for_instance(blue)).is_released  # held for the write, let go after it
    form = {"slug": "red", "label": "Alice's", "_save": "Save", TICKET_FIELD: str(ticket)}
    saved = alices.post(f"/admin/testapp/tag/{red.pk}/change/", with_token(form))
    assert saved.status_code == 302
    red.refresh_from_db()
    assert red.label == "Alice's"


def test_list_edits_are_written_through_the_fence(bob, django_capture_on_commit_callbacks):
    ticket = Ticket.objects.create(title="Printer on fire")
    with django_capture_on_commit_callbacks(execute=True):
        edit_in_list(browser(bob), "/admin/testapp/ticket/", "id", "title", {ticket.pk: "Printer fixed"})
    ticket.refresh_from_db()
    lock = get_client().get(key_for_instance(ticket))
    assert ticket.title == "Printer fixed"
    assert ticket.fencing_token == lock.fencing_token  # written under the lock the write took
    assert lock.is_released


def test_a_list_edit_is_not_written_when_a_newer_lock_wrote_the_row_after_its_claim(bob, monkeypatch):
    ticket = Ticket.objects.create(title="Printer on fire")
    save_form = TicketAdmin.save_form

    def newer_holder_writes_first(model_admin, request, form, change):
        # The row's lock changed hands between the row's claim and its write, and the new holder wrote it.
        Ticket.objects.filter(pk=ticket.pk).update(fencing_token=F("fencing_token") + 1)
        return save_form(model_admin, request, form, change)

    monkeypatch.setattr(TicketAdmin, "save_form", newer_holder_writes_first)
    bobs = browser(bob, raise_request_exception=False)
    response = edit_in_list(bobs, "/admin/testapp/ticket/", "id", "title", {ticket.pk: "Printer fixed"})
    ticket.refresh_from_db()
    assert ticket.title == "Printer on fire"  # the fence refused the write under the superseded lock
    assert response.status_code == 200  # back on the list, told why: not a 500
    assert "Nothing was saved" in response.content.decode()


def test_modifying_actions_skip_rows_someone_edits_and_read_only_ones_take_no_lock(alice, bob, tags):
    red, blue = tags
    open_change_page(browser(alice), red)
    bobs = browser(bob)
    selected = {"_selected_action": ["red", "blue"]}
    marked = bobs.post("/admin/testapp/tag/", with_token({"action": "mark_reviewed", **selected}), follow=True)
    assert "Red was not changed: Being edited by alice since" in marked.content.decode()
    red.refresh_from_db()
    blue.refresh_from_db()
    assert (red.label, blue.label) == ("Red", "reviewed")
    counted = bobs.post("/admin/testapp/tag/", with_token({"action": "count_selected", **selected}), follow=True)
    assert "2 selected" in counted.content.decode()


def test_rows_whose_free_lock_is_kept_for_a_waiter_are_left_to_the_waiter(
    alice, bob, make_staff, tags, django_capture_on_commit_callbacks
):
    """The queue's rule, as the change page, the delete page and Delete selected keep it."""
    red, blue = tags
    alices = browser(alice)
    ticket = open_change_page(alices, red)
    assert browser(bob).post(f"/admin/testapp/tag/{red.pk}/edit-lock/ask/", with_token({})).json()["state"] == "waiting"
    released = alices.post(f"/admin/testapp/tag/{red.pk}/edit-lock/release/", with_token({"ticket": str(ticket)}))
    assert released.json() == {"state": "released"}  # free now, and bob's turn
    carols = browser(make_staff("carol", *EDITOR))

    with django_capture_on_commit_callbacks(execute=True):
        listed = edit_in_list(carols, "/admin/testapp/tag/", "slug", "label", {"red": "Carol's", "blue": "Carol's"})
        action = {"action": "mark_reviewed", "_selected_action": ["red", "blue"]}
        acted = carols.post("/admin/testapp/tag/", with_token(action), follow=True)

    for response in (listed, acted):
        assert "Red was not changed: Nobody is editing this now: bob asked to edit first" in response.content.decode()
    red.refresh_from_db()
    blue.refresh_from_db()
    assert (red.label, blue.label) == ("Red", "reviewed")
    assert [waiter.name for waiter in get_client().get(key_for_instance(red)).waiters] == ["bob"]
