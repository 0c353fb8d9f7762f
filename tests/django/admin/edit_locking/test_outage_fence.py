"""EDIT_DURING_OUTAGE: a save made while DynamoDB does not answer never overwrites a newer fenced write.

A page opened during the outage carries the row's fencing token as it showed it (signed, bound to the
object and the user) and saves only if the row still carries it; a page that holds a ticket saves
through the fence with its ticket's token. Refused, the page comes back with what was typed, saying
why. On the in-process store and its virtual clock: ``faults.hang()`` is DynamoDB not answering.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core import signing
from django.utils.html import escape

from dynalock_django import fenced_save, lock_object
from dynalock_django.admin.edit_locking.outage_saves import FENCE_FIELD, page_fence
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.testing import LocksInMemory, locks_in_memory
from testproject.desk.models import Customer

from ...admin_support import logged_in
from ...testapp.models import Tag
from .test_admin_edit_lock import change_url, customer_form, open_page, ticket_of

pytestmark = [pytest.mark.django_db]

SOMEONE_SAVED = "Someone saved this record after you opened it."
NOT_CHECKED = "This page could not be checked for changes saved since it was opened."


@pytest.fixture
def memory() -> Iterator[LocksInMemory]:
    """The lock table in this process, EDIT_DURING_OUTAGE on; no breaker, so each hung call costs its time-out."""
    with locks_in_memory(EDIT_DURING_OUTAGE=True, BREAKER_THRESHOLD=None) as mem:
        yield mem


def form_of(page, **changes):
    """What the page posts when saved: its fields, its ticket and its signed fence, with ``changes`` typed in."""
    data = customer_form(ticket_of(page), **changes)
    fence = page.context["dynalock"]["fence"]
    if fence is not None:
        data[FENCE_FIELD] = fence
    return data


def saved_under_the_fence(client, customer, captured, **changes):
    page = open_page(client, customer)
    with captured(execute=True):
        response = client.post(change_url(customer), form_of(page, **changes))
    assert response.status_code == 302
    return ticket_of(page)


def assert_refused(response, message, typed):
    assert response.status_code == 200
    html = response.content.decode()
    assert "Nothing was saved." in html
    assert message in html
    assert response.context["adminform"].form.data["name"] == typed  # what was typed is on the page again
    assert f'value="{escape(typed)}"' in html


def test_a_page_opened_during_the_outage_does_not_save_over_a_fenced_change_made_since(
    memory, alice, bob, customer, django_capture_on_commit_callbacks
):
    bobs = logged_in(bob)
    memory.faults.hang()
    outage_page = open_page(bobs, customer)
    assert outage_page.context["dynalock"]["mode"] == "outage"
    memory.faults.heal()
    alice_ticket = saved_under_the_fence(
        logged_in(alice), customer, django_capture_on_commit_callbacks, name="Acme (Alice)"
    )
    memory.faults.hang()

    refused = bobs.post(change_url(customer), form_of(outage_page, name="Acme (Bob)"))

    assert_refused(refused, SOMEONE_SAVED, "Acme (Bob)")
    customer.refresh_from_db()
    assert (customer.name, customer.fencing_token) == ("Acme (Alice)", alice_ticket.fencing_token)
    # Shown again, the page still refuses: the user reopens it, and sees what was saved meanwhile.
    again = bobs.post(
        change_url(customer),
        {**form_of(outage_page, name="Acme (Bob)"), FENCE_FIELD: refused.context["dynalock"]["fence"]},
    )
    assert_refused(again, SOMEONE_SAVED, "Acme (Bob)")
    customer.refresh_from_db()
    assert customer.name == "Acme (Alice)"


def test_a_page_holding_token_n_does_not_save_over_a_jobs_write_under_a_newer_token(
    memory, alice, customer, django_capture_on_commit_callbacks
):
    client = logged_in(alice)
    page = open_page(client, customer)
    ticket = ticket_of(page)
    lock = get_client().get(key_for_instance(customer))
    get_client().force_release(lock, released_by="ops")  # the tab's lock goes; a job takes the row's
    with lock_object(customer) as lease:
        job = Customer.objects.get(pk=customer.pk)
        job.plan = "free"
        fenced_save(job, lease)
    assert lease.fencing_token > ticket.fencing_token
    memory.faults.hang()

    refused = client.post(change_url(customer), form_of(page, name="Acme (Alice)"))

    assert_refused(refused, SOMEONE_SAVED, "Acme (Alice)")
    customer.refresh_from_db()
    assert (customer.name, customer.plan, customer.fencing_token) == ("Acme", "free", lease.fencing_token)


def test_a_page_opened_during_the_outage_saves_when_nothing_was_saved_since(memory, alice, customer, caplog):
    client = logged_in(alice)
    memory.faults.hang()
    page = open_page(client, customer)

    saved = client.post(change_url(customer), form_of(page, name="Acme Ltd"))

    assert saved.status_code == 302
    customer.refresh_from_db()
    assert (customer.name, customer.fencing_token) == ("Acme Ltd", None)


def test_a_ticketed_page_saves_through_the_fence_with_its_tickets_token(memory, alice, customer):
    client = logged_in(alice)
    page = open_page(client, customer)
    memory.faults.hang()

    saved = client.post(change_url(customer), form_of(page, name="Acme Ltd"))

    assert saved.status_code == 302
    customer.refresh_from_db()
    assert (customer.name, customer.fencing_token) == ("Acme Ltd", ticket_of(page).fencing_token)


def test_a_forged_absent_or_borrowed_fence_is_refused_and_changes_nothing(memory, alice, bob, customer):
    other = Customer.objects.create(name="Globex")
    client = logged_in(alice)
    memory.faults.hang()
    page = open_page(client, customer)
    fence = page.context["dynalock"]["fence"]
    shown = signing.loads(fence, salt="dynalock_django.edit-page-fence")
    forgeries = {
        "absent": None,
        "made up": "not-a-signed-value",
        "re-signed without the salt": signing.dumps({**shown, "row": 10**18}),
        "edited": fence.replace(fence.split(":")[0], signing.dumps({**shown, "row": 10**18}).split(":")[0]),
        "another object's": page_fence(other, alice, None),
        "another user's": page_fence(customer, bob, None),
    }
    for name, forged in forgeries.items():
        data = form_of(page, name=f"Acme ({name})")
        if forged is None:
            del data[FENCE_FIELD]
        else:
            data[FENCE_FIELD] = forged
        refused = client.post(change_url(customer), data)
        assert_refused(refused, NOT_CHECKED, f"Acme ({name})")
    customer.refresh_from_db()
    assert (customer.name, customer.fencing_token) == ("Acme", None)


def test_a_ticket_the_page_was_not_given_does_not_pass_the_fence(memory, alice, customer):
    """A made-up ticket with a huge token would pass "not newer than the ticket's": only the page's own counts."""
    client = logged_in(alice)
    page = open_page(client, customer)
    Customer.objects.filter(pk=customer.pk).update(fencing_token=ticket_of(page).fencing_token + 1)  # a job wrote
    memory.faults.hang()
    data = form_of(page, name="Acme (forged ticket)")
    data["_dynalock_ticket"] = f"{ticket_of(page).tab}.{10**18}"

    refused = client.post(change_url(customer), data)

    assert_refused(refused, SOMEONE_SAVED, "Acme (forged ticket)")
    customer.refresh_from_db()
    assert customer.name == "Acme"


def test_a_model_without_a_fencing_token_saves_during_the_outage_unfenced(memory, make_staff):
    """No FencingTokenField, no fence: as documented, the save is made as it comes (dynalock.W003)."""
    tag = Tag.objects.create(slug="urgent")
    client = logged_in(make_staff("root", is_superuser=True))
    memory.faults.hang()
    page = client.get(change_url(tag))
    assert page.context["dynalock"]["fence"] is None

    saved = client.post(change_url(tag), {"slug": "urgent", "label": "Urgent!"})

    assert saved.status_code == 302
    tag.refresh_from_db()
    assert tag.label == "Urgent!"
