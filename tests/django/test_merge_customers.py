"""The support desk's "Merge customers" action: both customers' edit locks, through the fence, or nothing."""

from __future__ import annotations

import pytest
from django.db.models import F
from django.db.models.signals import post_delete
from django.test import override_settings

from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData
from testproject.desk import admin as desk_admin
from testproject.desk.models import Address, Customer, Note

from ..dynamodb_support import RequestCounter
from .admin_support import DESK_EDITOR, PATIENT, browser, logged_in, with_token

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

CHANGELIST = "/admin/desk/customer/"


@pytest.fixture(autouse=True)
def patient_leases(dynalock):
    """Leases and reads no loaded machine's pause runs out: on one, the claim of the selected customers' 1 s edit
    locks was refused ("Nothing was changed.") before any action ran. What each test asserts is what the action
    does once it has them (or someone else's), not their renewal."""
    with override_settings(DYNALOCK={**dynalock, **PATIENT}):
        yield


@pytest.fixture
def pair(customer):
    """Acme (the older record, kept) and its duplicate, each with an address and a note."""
    duplicate = Customer.objects.create(name="ACME Inc.", email="billing@acme.example", plan="pro")
    for owner in (customer, duplicate):
        Address.objects.create(customer=owner, street=f"{owner.pk} Main St", city="Springfield")
        Note.objects.create(customer=owner, body=f"note on {owner.name}")
    return customer, duplicate


def merge(client, *objects, follow=True):
    data = {"action": "merge_customers", "_selected_action": [obj.pk for obj in objects]}
    return client.post(CHANGELIST, with_token(data), follow=follow)


def test_merging_moves_addresses_and_notes_under_both_locks_through_the_fence(
    alice, pair, django_capture_on_commit_callbacks
):
    kept, duplicate = pair
    seen_while_merging = []

    def record(sender, instance, **_):
        seen_while_merging.extend(get_client().get(key_for_instance(obj)) for obj in (kept, duplicate))

    post_delete.connect(record, sender=Customer)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            html = merge(browser(alice), duplicate, kept).content.decode()
    finally:
        post_delete.disconnect(record, sender=Customer)
    assert "Merged ACME Inc. into Acme: 1 address(es) and 1 note(s) moved." in html
    assert not Customer.objects.filter(pk=duplicate.pk).exists()
    assert kept.addresses.count() == 2
    assert kept.notes.count() == 2
    kept_lock = seen_while_merging[0]
    for lock in seen_while_merging:
        assert not lock.is_released
        assert LockData.from_bytes(lock.data) == LockData(purpose="edit", user_id=str(alice.pk), username="alice")
    kept.refresh_from_db()
    assert kept.email == "billing@acme.example"  # filled in from the duplicate: Acme had none
    assert kept.fencing_token == kept_lock.fencing_token  # written under its lock's token
    assert get_client().get(key_for_instance(kept)).is_released  # let go once the merge committed


@pytest.mark.requires("transactions")
def test_both_locks_are_taken_in_one_transaction(alice, pair, dynalock, django_capture_on_commit_callbacks):
    with override_settings(DYNALOCK={**dynalock, **PATIENT}):
        requests_made = RequestCounter(get_client().dynamodb)
        with django_capture_on_commit_callbacks(execute=False) as release:
            merge(browser(alice), *pair, follow=False)  # the changelist it redirects to reads its column
        assert dict(requests_made.calls) == {"TransactWriteItems": 1, "BatchGetItem": 1}  # not also row by row
        requests_made.reset()
        for callback in release:
            callback()
        assert dict(requests_made.calls) == {"TransactWriteItems": 1}
    assert Customer.objects.count() == 1


def test_nothing_is_merged_while_someone_else_edits_one(alice, make_staff, pair):
    kept, duplicate = pair
    bob = make_staff("bob", *DESK_EDITOR)
    logged_in(bob).get(f"/admin/desk/customer/{duplicate.pk}/change/")
    html = merge(browser(alice), kept, duplicate).content.decode()
    assert "ACME Inc.: Being edited by bob since" in html
    assert "Nothing was changed." in html
    assert Customer.objects.count() == 2
    assert kept.addresses.count() == 1


def test_exactly_two_customers_are_merged(alice, pair):
    third = Customer.objects.create(name="Acme Corp", plan="free")
    html = merge(browser(alice), *pair, third).content.decode()
    assert "Select exactly two customers to merge." in html
    assert Customer.objects.count() == 3


def test_without_the_delete_permission_the_action_is_not_offered_and_changes_nothing(make_staff, pair):
    clerk = make_staff("clerk", "view_customer", "change_customer")
    client = browser(clerk)
    assert "merge_customers" not in client.get(CHANGELIST).content.decode()
    merge(client, *pair)
    assert Customer.objects.count() == 2
    assert get_client().get(key_for_instance(pair[0])) is None  # no lock was even taken


def test_a_get_or_a_post_without_csrf_changes_nothing(alice, pair):
    client = browser(alice)
    selected = {"action": "merge_customers", "_selected_action": [obj.pk for obj in pair]}
    client.get(CHANGELIST, selected)
    assert client.post(CHANGELIST, selected).status_code == 403
    assert Customer.objects.count() == 2
    assert get_client().get(key_for_instance(pair[0])) is None


def test_the_kept_row_is_saved_through_the_fence(alice, pair, monkeypatch):
    kept, duplicate = pair
    fenced_refresh = desk_admin.fenced_refresh

    def newer_holder_writes_after_our_claim(customer, locks):
        fenced_refresh(customer, locks)
        if customer.pk == duplicate.pk:  # both rows claimed: now a newer lock's write lands on the kept one
            Customer.objects.filter(pk=kept.pk).update(name="Acme (newer)", fencing_token=F("fencing_token") + 1)

    monkeypatch.setattr(desk_admin, "fenced_refresh", newer_holder_writes_after_our_claim)
    html = merge(browser(alice), kept, duplicate).content.decode()
    assert "Nothing was changed." in html
    assert "newer than this lease" in html  # the save was refused, and everything the merge did rolled back
    assert Customer.objects.count() == 2
    assert duplicate.addresses.count() == 1


def test_a_row_a_newer_lock_wrote_refuses_the_whole_merge(alice, pair):
    kept, duplicate = pair
    Customer.objects.filter(pk=kept.pk).update(fencing_token=2**62)  # as if written under a far newer lock
    html = merge(browser(alice), kept, duplicate).content.decode()
    assert "Nothing was changed." in html
    assert "newer than this lease" in html
    assert Customer.objects.count() == 2
    assert duplicate.addresses.count() == 1  # the moves rolled back with the rest
