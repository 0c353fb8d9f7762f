"""EditLockMixin: one tab edits an object at a time; who may renew, release, save and take over."""

from __future__ import annotations

import functools
import os
import socket
import warnings

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.db.models.signals import post_delete
from django.test import Client, override_settings

from dynalock_django import client as client_module
from dynalock_django import lock_object
from dynalock_django.admin.edit_locking.tickets import HANDOFF_COOKIE, TICKET_FIELD, EditTicket
from dynalock_django.client import get_client
from dynalock_django.conf import DEFAULTS
from dynalock_django.dynamodb import LockClient, VirtualClock
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData
from testproject.desk.admin import CustomerAdmin
from testproject.desk.models import Customer

from ....dynamodb.clocks import TICK
from ...admin_support import DESK_EDITOR, logged_in
from ...testapp.admin import TagAdmin
from ...testapp.models import Tag, Ticket

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def carol(make_staff):
    return make_staff("carol", *DESK_EDITOR, "view_lock", "force_release")


@pytest.fixture
def vera(make_staff):
    return make_staff("vera", "view_customer")


def change_url(obj):
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{quote(obj.pk)}/change/"


def edit_lock_url(obj, action):
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{quote(obj.pk)}/edit-lock/{action}/"


def open_page(client, obj):
    page = client.get(change_url(obj))
    assert page.status_code == 200
    return page


def ticket_of(page):
    return page.context["dynalock"]["state"].ticket


def customer_form(ticket, button="_save", **changes):
    data = {"name": "Acme", "email": "", "phone": "", "plan": "pro", button: "1", **changes}
    for prefix in ("addresses", "notes"):
        data |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
    if ticket is not None:
        data[TICKET_FIELD] = str(ticket)
    return data


def stored(obj):
    return get_client().get(key_for_instance(obj))


def renew(client, obj, ticket):
    return client.post(edit_lock_url(obj, "renew"), {"ticket": str(ticket)})


# ---------------------------------------------------------------- opening the page


def test_opening_the_change_page_takes_the_lock_for_that_tab(alice, customer, dynalock):
    page = open_page(logged_in(alice), customer)
    ticket = ticket_of(page)
    html = page.content.decode()
    assert f'name="{TICKET_FIELD}" value="{ticket}"' in html
    assert 'name="_save"' in html
    assert "dynalock_django/edit_lock.js" in html
    lock = stored(customer)
    assert not lock.is_released
    assert lock.owner_name == f"django-user:{alice.pk}/tab:{ticket.tab}"
    assert lock.fencing_token == ticket.fencing_token
    assert lock.lease_duration == 60.0  # EDIT_LEASE_DURATION, not the process clients' lease
    assert LockData.from_bytes(lock.data).username == "alice"
    assert LockData.from_bytes(lock.data).purpose == "edit"


def test_someone_else_gets_a_read_only_page_saying_who_edits_since_when(alice, bob, customer):
    customer.addresses.create(street="1 Road Runner Way", city="Phoenix")
    open_page(logged_in(alice), customer)
    page = open_page(logged_in(bob), customer)
    html = page.content.decode()
    assert ticket_of(page) is None
    assert "Being edited by alice since" in html
    assert 'name="_save"' not in html
    assert 'name="name"' not in html  # the fields are shown read-only
    assert 'name="addresses-0-street"' not in html  # and so are the inlines
    assert "1 Road Runner Way" in html
    assert page.context["dynalock"]["config"]["mode"] == "view"
    assert "Take over" not in html  # bob may not take alice's lock


def test_a_view_only_user_takes_no_lock_but_sees_who_edits(alice, vera, customer):
    ticket = ticket_of(open_page(logged_in(alice), customer))
    html = open_page(logged_in(vera), customer).content.decode()
    assert "Being edited by alice" in html
    assert stored(customer).fencing_token == ticket.fencing_token


def test_a_row_locked_by_code_names_host_and_pid_only_to_who_may_see_live_locks(vera, carol, customer):
    with lock_object(customer):
        banners = [open_page(logged_in(user), customer).context["dynalock"] for user in (vera, carol)]
    host = f"{socket.gethostname()} (pid {os.getpid()})"
    assert banners[0]["message"].startswith("Being edited by a background job since")
    assert banners[0]["config"]["holder"] == "a background job"
    assert host not in str(banners[0])
    assert banners[1]["message"].startswith(f"Being edited by {host} since")  # carol has view_lock
    assert banners[1]["config"]["holder"] == host


def test_add_pages_take_no_lock(alice, dynalock):
    page = logged_in(alice).get("/admin/desk/customer/add/")
    assert page.status_code == 200
    assert "dynalock" not in page.context
    assert list(get_client().scan()) == []


def test_the_page_extends_the_projects_own_change_form(make_staff):
    admin_user = make_staff("root", is_superuser=True)
    ticket = Ticket.objects.create(title="Printer on fire")
    html = open_page(logged_in(admin_user), ticket).content.decode()
    assert 'id="project-template"' in html
    assert 'id="dynalock-banner"' in html


@pytest.mark.parametrize(
    "make", [lambda: Ticket.objects.create(title="UUID"), lambda: Tag.objects.create(slug="a/b c,d%")]
)
def test_objects_with_uuid_and_string_pks_are_edit_locked_like_integer_ones(make, make_staff):
    obj = make()
    alice = make_staff("alice", is_superuser=True)
    bob = make_staff("bob", is_superuser=True)
    alices, url = logged_in(alice), change_url(obj)
    page = alices.get(url)
    assert page.status_code == 200
    ticket = ticket_of(page)
    assert ticket is not None
    assert ticket_of(logged_in(bob).get(url)) is None
    assert renew(alices, obj, ticket).json() == {"state": "held", "waiting": ""}


# ---------------------------------------------------------------- saving


def test_a_save_goes_through_the_fence_and_releases_the_lock(alice, customer, django_capture_on_commit_callbacks):
    client = logged_in(alice)
    ticket = ticket_of(open_page(client, customer))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(change_url(customer), customer_form(ticket, name="Acme Inc"))
    assert response.status_code == 302
    customer.refresh_from_db()
    assert customer.name == "Acme Inc"
    assert customer.fencing_token == ticket.fencing_token
    assert stored(customer).is_released


def test_a_save_without_the_lock_is_refused_and_writes_nothing(alice, bob, customer):
    alice_ticket = ticket_of(open_page(logged_in(alice), customer))
    bobs = logged_in(bob)
    for ticket in (None, alice_ticket, EditTicket("x" * 22, 1)):  # none, alice's own, a made-up one
        response = bobs.post(change_url(customer), customer_form(ticket, name="Bob was here"))
        assert response.status_code == 200
        assert "Nothing was saved" in response.content.decode()
    customer.refresh_from_db()
    assert customer.name == "Acme"
    lock = stored(customer)
    assert lock.owner_name.endswith(alice_ticket.tab)
    assert not lock.is_released


def test_a_save_after_the_lock_was_taken_over_is_refused_with_who_took_it(alice, carol, customer):
    alices, carols = logged_in(alice), logged_in(carol)
    ticket = ticket_of(open_page(alices, customer))
    take_over = edit_lock_url(customer, "take-over")
    assert carols.post(take_over, {"fencing_token": ticket.fencing_token}).status_code == 302
    response = alices.post(change_url(customer), customer_form(ticket, name="Too late"))
    html = response.content.decode()
    assert "carol took over editing at" in html
    assert "Nothing was saved" in html
    assert 'name="name" value="Too late"' in html  # alice's input stays on the page to copy
    customer.refresh_from_db()
    assert customer.name == "Acme"
    # One thing to say, said once: in the banner, with nothing for her to correct in the form.
    assert html.count("Nothing was saved") == 1
    assert "Please correct the error" not in html
    assert "errorlist" not in html


def test_a_refused_save_with_a_field_error_too_still_asks_for_the_correction(alice, carol, customer):
    alices, carols = logged_in(alice), logged_in(carol)
    ticket = ticket_of(open_page(alices, customer))
    assert carols.post(edit_lock_url(customer, "take-over"), {"fencing_token": ticket.fencing_token}).status_code == 302
    html = alices.post(change_url(customer), customer_form(ticket, name="")).content.decode()  # name is required
    assert "Please correct the errors below." in html  # the field's and the lock's
    assert "Nothing was saved" in html


def test_save_and_continue_keeps_the_lock_for_the_tabs_next_page(alice, customer):
    client = logged_in(alice)
    ticket = ticket_of(open_page(client, customer))
    response = client.post(change_url(customer), customer_form(ticket, button="_continue", name="Acme Inc"))
    assert response.status_code == 302
    assert response.cookies[HANDOFF_COOKIE].value == str(ticket)
    assert response.cookies[HANDOFF_COOKIE]["path"] == change_url(customer)
    assert response.cookies[HANDOFF_COOKIE]["httponly"]
    assert not stored(customer).is_released
    next_page = client.get(response.url)
    new_ticket = ticket_of(next_page)
    assert new_ticket.fencing_token > ticket.fencing_token
    assert next_page.cookies[HANDOFF_COOKIE].value == ""  # used up
    # The old page's release, sent as it unloads, finds nothing of its own.
    assert client.post(edit_lock_url(customer, "release"), {"ticket": str(ticket)}).status_code == 409
    assert stored(customer).fencing_token == new_ticket.fencing_token
    assert not stored(customer).is_released


def test_a_reload_hands_the_lock_to_the_new_page(alice, customer, requests_made):
    client = logged_in(alice)
    ticket = ticket_of(open_page(client, customer))
    client.cookies[HANDOFF_COOKIE] = str(ticket)  # what the page sets as it unloads
    requests_made.reset()
    new_ticket = ticket_of(open_page(client, customer))
    assert dict(requests_made.calls) == {"GetItem": 1, "UpdateItem": 1}
    assert new_ticket is not None
    assert new_ticket.tab != ticket.tab
    assert renew(client, customer, ticket).status_code == 409
    assert renew(client, customer, new_ticket).status_code == 200


def test_a_handoff_cookie_of_another_user_hands_nothing_over(alice, bob, customer):
    ticket = ticket_of(open_page(logged_in(alice), customer))
    bobs = logged_in(bob)
    bobs.cookies[HANDOFF_COOKIE] = str(ticket)
    assert ticket_of(open_page(bobs, customer)) is None
    assert stored(customer).fencing_token == ticket.fencing_token


def test_a_save_refused_by_the_fence_writes_nothing(alice, customer):
    client = logged_in(alice)
    ticket = ticket_of(open_page(client, customer))
    Customer.objects.filter(pk=customer.pk).update(fencing_token=ticket.fencing_token + 1000)
    response = client.post(change_url(customer), customer_form(ticket, name="Stale"), follow=True)
    assert "Nothing was saved" in response.content.decode()
    customer.refresh_from_db()
    assert customer.name == "Acme"


def test_a_model_without_fencing_token_saves_under_the_lock_unfenced(make_staff):
    tag = Tag.objects.create(slug="urgent")
    client = logged_in(make_staff("root", is_superuser=True))
    ticket = ticket_of(client.get(change_url(tag)))
    refused = client.post(change_url(tag), {"slug": "urgent", "label": "No lock"})  # no ticket
    assert "Nothing was saved" in refused.content.decode()
    tag.refresh_from_db()
    assert tag.label == ""
    response = client.post(change_url(tag), {"slug": "urgent", "label": "Urgent!", TICKET_FIELD: str(ticket)})
    assert response.status_code == 302
    tag.refresh_from_db()
    assert tag.label == "Urgent!"


# ---------------------------------------------------------------- the same user, two tabs


def test_a_second_tab_of_the_same_user_is_read_only_and_can_take_over(alice, customer):
    client = logged_in(alice)
    first = ticket_of(open_page(client, customer))
    second_page = open_page(client, customer)
    html = second_page.content.decode()
    assert ticket_of(second_page) is None
    assert "You are editing this in another tab" in html
    assert "Edit here instead" in html
    response = client.post(edit_lock_url(customer, "take-over"), {"fencing_token": first.fencing_token})
    assert response.status_code == 302
    third = ticket_of(client.get(response.url))
    assert third is not None
    lost = renew(client, customer, first)
    assert lost.status_code == 409
    assert "You are editing this in another tab now" in lost.json()["message"]
    assert not LogEntry.objects.exists()  # one's own lock: nothing to log


# ---------------------------------------------------------------- someone else's lock


def test_taking_over_someone_elses_lock_needs_the_force_release_permission(alice, bob, customer):
    ticket = ticket_of(open_page(logged_in(alice), customer))
    bobs = logged_in(bob)
    take_over = edit_lock_url(customer, "take-over")
    assert bobs.get(take_over).status_code == 403
    assert bobs.post(take_over, {"fencing_token": ticket.fencing_token}).status_code == 403
    assert stored(customer).fencing_token == ticket.fencing_token


def test_take_over_with_confirmation_is_logged_and_the_holder_is_told(alice, carol, customer):
    alices, carols = logged_in(alice), logged_in(carol)
    ticket = ticket_of(open_page(alices, customer))
    read_only = open_page(carols, customer).content.decode()
    assert "Take over…" in read_only
    take_over = edit_lock_url(customer, "take-over")
    confirmation = carols.get(take_over).content.decode()
    assert "<strong>alice</strong> has been editing this since" in confirmation
    assert stored(customer).fencing_token == ticket.fencing_token  # nothing happens before the POST
    response = carols.post(take_over, {"fencing_token": ticket.fencing_token})
    assert response.status_code == 302
    assert ticket_of(open_page(carols, customer)) is not None
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.user) == (str(customer.pk), carol)
    assert "Took over the edit lock held by alice" in entry.get_change_message()
    told = renew(alices, customer, ticket)
    assert told.status_code == 409
    assert "carol took over editing at" in told.json()["message"]


def test_take_over_of_a_holding_that_changed_since_the_confirmation_changes_nothing(alice, carol, customer):
    alices = logged_in(alice)
    first = ticket_of(open_page(alices, customer))
    alices.post(edit_lock_url(customer, "release"), {"ticket": str(first)})
    second = ticket_of(open_page(alices, customer))  # alice again, a new holding
    response = logged_in(carol).post(edit_lock_url(customer, "take-over"), {"fencing_token": first.fencing_token})
    assert response.status_code == 302
    assert stored(customer).fencing_token == second.fencing_token
    assert not LogEntry.objects.exists()


def test_a_force_release_from_the_live_locks_page_is_told_to_the_holders_page(alice, carol, customer):
    alices = logged_in(alice)
    ticket = ticket_of(open_page(alices, customer))
    held = stored(customer)
    form = {"key": held.key, "owner": held.owner_name, "fencing_token": held.fencing_token}
    logged_in(carol).post("/admin/dynalock_django/lock/release/", form)
    told = renew(alices, customer, ticket)
    assert told.status_code == 409
    assert "carol released your edit lock" in told.json()["message"]


# ---------------------------------------------------------------- the endpoints


def test_renew_keeps_the_lock_with_one_request(alice, customer, requests_made):
    client = logged_in(alice)
    ticket = ticket_of(open_page(client, customer))
    before = stored(customer).record_version_number
    requests_made.reset()
    response = renew(client, customer, ticket)
    assert response.json() == {"state": "held", "waiting": ""}  # nobody asked to edit
    assert dict(requests_made.calls) == {"UpdateItem": 1}
    assert stored(customer).record_version_number != before


def test_one_user_can_never_renew_or_release_another_users_lock(alice, bob, customer):
    ticket = ticket_of(open_page(logged_in(alice), customer))
    before = stored(customer)
    bobs = logged_in(bob)
    assert renew(bobs, customer, ticket).status_code == 409
    assert bobs.post(edit_lock_url(customer, "release"), {"ticket": str(ticket)}).status_code == 409
    after = stored(customer)
    assert (after.record_version_number, after.is_released) == (before.record_version_number, False)


def test_renew_release_and_take_over_without_a_csrf_token_are_403_and_change_nothing(alice, customer):
    client = logged_in(alice, enforce_csrf_checks=True)
    ticket = ticket_of(open_page(client, customer))
    before = stored(customer).record_version_number
    assert renew(client, customer, ticket).status_code == 403
    assert client.post(edit_lock_url(customer, "release"), {"ticket": str(ticket)}).status_code == 403
    assert client.post(edit_lock_url(customer, "take-over"), {"fencing_token": 1}).status_code == 403
    assert stored(customer).record_version_number == before
    assert not stored(customer).is_released


def test_the_endpoints_check_staff_status_and_permissions(alice, vera, customer, make_staff):
    ticket = ticket_of(open_page(logged_in(alice), customer))
    anonymous = Client()
    assert renew(anonymous, customer, ticket).status_code == 302  # to the login page
    assert anonymous.get(edit_lock_url(customer, "status")).status_code == 302
    outsider = make_staff("mallory", *DESK_EDITOR, is_staff=False)
    assert renew(logged_in(outsider), customer, ticket).status_code == 302  # not staff
    nobody = make_staff("nobody")
    assert logged_in(nobody).get(edit_lock_url(customer, "status")).status_code == 403
    veras = logged_in(vera)  # may view, not change
    assert renew(veras, customer, ticket).status_code == 403
    assert veras.get(edit_lock_url(customer, "take-over")).status_code == 403
    assert veras.get(edit_lock_url(customer, "status")).json()["holder"] == "alice"


def test_the_endpoints_take_only_their_method_and_a_ticket(alice, customer):
    client = logged_in(alice)
    open_page(client, customer)
    assert client.get(edit_lock_url(customer, "renew")).status_code == 405
    assert client.post(edit_lock_url(customer, "status")).status_code == 405
    garbage = client.post(edit_lock_url(customer, "renew"), {"ticket": "../../etc"})
    assert garbage.status_code == 400
    assert client.post("/admin/desk/customer/999999/edit-lock/renew/", {"ticket": "x"}).status_code == 404


def test_release_frees_the_lock_and_a_read_only_page_hears_it(alice, bob, customer):
    alices, bobs = logged_in(alice), logged_in(bob)
    ticket = ticket_of(open_page(alices, customer))
    status = bobs.get(edit_lock_url(customer, "status")).json()
    assert status["state"] == "held"
    assert status["holder"] == "alice"
    assert "Being edited by alice" in status["message"]
    assert alices.post(edit_lock_url(customer, "release"), {"ticket": str(ticket)}).json() == {"state": "released"}
    assert bobs.get(edit_lock_url(customer, "status")).json() == {"state": "free"}
    assert ticket_of(open_page(bobs, customer)) is not None


def test_a_tab_that_stopped_renewing_loses_its_lock_one_edit_lease_after_the_lock_was_seen(
    alice, bob, customer, monkeypatch
):
    """On a fake clock: the process's client (rebuilt here) reads it for the holder's silence."""
    clock = VirtualClock()
    monkeypatch.setattr(client_module, "LockClient", functools.partial(LockClient, clock=clock))
    client_module.close_client(release=False)
    open_page(logged_in(alice), customer)  # and the tab dies: no renewal, no release
    bobs = logged_in(bob)
    assert bobs.get(edit_lock_url(customer, "status")).json()["state"] == "held"
    clock.advance(DEFAULTS["EDIT_LEASE_DURATION"] - TICK)
    assert bobs.get(edit_lock_url(customer, "status")).json()["state"] == "held"
    assert ticket_of(open_page(bobs, customer)) is None
    clock.advance(TICK)
    assert bobs.get(edit_lock_url(customer, "status")).json() == {"state": "free"}
    assert ticket_of(open_page(bobs, customer)) is not None


# ---------------------------------------------------------------- deleting


def delete_url(obj):
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{quote(obj.pk)}/delete/"


def test_nothing_is_deleted_while_someone_else_edits(alice, bob, customer):
    ticket = ticket_of(open_page(logged_in(alice), customer))
    bobs = logged_in(bob)
    read_only = open_page(bobs, customer).content.decode()
    assert "/delete/" not in read_only  # no delete link on the read-only page
    for send in (bobs.get, lambda url: bobs.post(url, {"post": "yes"})):
        response = send(delete_url(customer))
        assert response.status_code == 302
        assert response.url == change_url(customer)
        refused = bobs.get(response.url).content.decode()
        assert "Being edited by alice since" in refused
        assert "Nothing was deleted." in refused
    assert Customer.objects.filter(pk=customer.pk).exists()
    lock = stored(customer)
    assert (lock.owner_name, lock.fencing_token, lock.is_released) == (
        f"django-user:{alice.pk}/tab:{ticket.tab}",
        ticket.fencing_token,
        False,
    )


def test_the_editor_deletes_from_their_own_change_page(alice, customer, django_capture_on_commit_callbacks):
    client = logged_in(alice)
    ticket = ticket_of(open_page(client, customer))
    # The change page's release (sent as it unloads) has not arrived yet: the user's own lock does not stop them.
    assert client.get(delete_url(customer)).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(delete_url(customer), {"post": "yes"})
    assert response.status_code == 302
    assert not Customer.objects.filter(pk=customer.pk).exists()
    lock = stored(customer)
    assert lock.is_released
    assert lock.fencing_token > ticket.fencing_token  # the deletion took the lock over from the tab


def test_a_deletion_holds_the_lock_until_it_commits(alice, customer, requests_made, django_capture_on_commit_callbacks):
    seen_while_deleting = []

    def record(sender, instance, **kwargs):
        seen_while_deleting.append(stored(instance))

    post_delete.connect(record, sender=Customer)
    try:
        requests_made.reset()
        with django_capture_on_commit_callbacks(execute=True):
            response = logged_in(alice).post(delete_url(customer), {"post": "yes"})
    finally:
        post_delete.disconnect(record, sender=Customer)
    assert response.status_code == 302
    [during] = seen_while_deleting
    assert not during.is_released
    assert during.owner_name.startswith(f"django-user:{alice.pk}/tab:")
    assert dict(requests_made.calls) == {"UpdateItem": 2, "GetItem": 1}  # take, (the receiver's read), let go
    assert stored(customer).is_released  # let go once the deletion committed


def test_a_delete_page_without_the_permission_takes_no_lock(vera, customer):
    assert logged_in(vera).post(delete_url(customer), {"post": "yes"}).status_code == 403
    assert stored(customer) is None
    assert Customer.objects.filter(pk=customer.pk).exists()


def test_without_dynamodb_nothing_is_deleted(alice, customer, dynalock):
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "no-such-table"}):
        client = logged_in(alice)
        response = client.post(delete_url(customer), {"post": "yes"})
        assert response.status_code == 302
        assert "Edit locks are unavailable" in client.get(response.url).content.decode()
    assert Customer.objects.filter(pk=customer.pk).exists()


def delete_selected(client, *objects, confirmed):
    data = {"action": "delete_selected", "_selected_action": [obj.pk for obj in objects]}
    if confirmed:
        data["post"] = "yes"
    return client.post("/admin/desk/customer/", data, follow=True)


def test_delete_selected_deletes_nothing_while_someone_else_edits_one(
    alice, bob, customer, django_capture_on_commit_callbacks
):
    other = Customer.objects.create(name="Globex", plan="free")
    ticket = ticket_of(open_page(logged_in(alice), customer))
    bobs = logged_in(bob)
    for confirmed in (False, True):  # the confirmation page, then the deletion itself
        with django_capture_on_commit_callbacks(execute=True):
            html = delete_selected(bobs, customer, other, confirmed=confirmed).content.decode()
        assert "Acme: Being edited by alice since" in html
        assert "Nothing was deleted." in html
    assert Customer.objects.filter(pk__in=[customer.pk, other.pk]).count() == 2
    assert stored(customer).fencing_token == ticket.fencing_token
    assert not stored(customer).is_released
    assert stored(other) is None or stored(other).is_released  # not kept for the deletion that was refused


def test_delete_selected_deletes_under_the_locks(alice, customer, requests_made, django_capture_on_commit_callbacks):
    other = Customer.objects.create(name="Globex", plan="free")
    client = logged_in(alice)
    requests_made.reset()
    confirmation = delete_selected(client, customer, other, confirmed=False)
    assert "Are you sure" in confirmation.content.decode()
    assert dict(requests_made.calls) == {"GetItem": 2}  # the confirmation page looks at each lock
    requests_made.reset()
    with django_capture_on_commit_callbacks(execute=True):
        deleted = delete_selected(client, customer, other, confirmed=True)
    assert "Successfully deleted 2 customers." in deleted.content.decode()
    # Both locks taken in one transaction (their tokens read back in one request), let go in another;
    # the client's heartbeat may renew them meanwhile (UpdateItem), the suite's leases being short.
    transactions = {op: count for op, count in requests_made.calls.items() if op != "UpdateItem"}
    assert transactions == {"TransactWriteItems": 2, "BatchGetItem": 1}
    assert not Customer.objects.filter(pk__in=[customer.pk, other.pk]).exists()
    assert stored(customer).is_released
    assert stored(other).is_released


def test_the_actions_override_raises_no_deprecation_warning(alice, customer):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Django 6.1 warns about get_actions() without action_location
        changelist = logged_in(alice).get("/admin/desk/customer/")
    assert 'value="delete_selected"' in changelist.content.decode()


# ---------------------------------------------------------------- failures and checks


def test_without_dynamodb_the_page_is_read_only_and_says_why(alice, customer, dynalock):
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "no-such-table"}):
        client = logged_in(alice)
        page = open_page(client, customer)
        assert "Edit locks are unavailable" in page.content.decode()
        assert 'name="_save"' not in page.content.decode()
        refused = client.post(change_url(customer), customer_form(EditTicket("y" * 22, 5), name="Blind"))
    assert "Nothing was saved" in refused.content.decode()
    customer.refresh_from_db()
    assert customer.name == "Acme"


def test_w003_an_edit_locked_model_without_fencing_token():
    from django.contrib import admin

    assert "dynalock.W003" in [message.id for message in TagAdmin(Tag, admin.site).check()]
    assert "dynalock.W003" not in [message.id for message in CustomerAdmin(Customer, admin.site).check()]
