"""An idle change page lets its lock go; "Continue editing" takes it again unless the object changed meanwhile."""

from __future__ import annotations

import json
import math
import re

import pytest
from django.test import override_settings

from dynalock_django import lock_object
from dynalock_django.admin.edit_locking.idle_resume import same_row_models
from dynalock_django.admin.edit_locking.tickets import TICKET_FIELD
from dynalock_django.conf import MAX_PAGE_SECONDS
from dynalock_django.fencing import fenced_save

from ...admin_support import browser, logged_in, with_token
from ...testapp.models import Account, AccountProxy, PremiumAccount, Tag, TagProxy
from .test_admin_edit_lock import change_url, customer_form, edit_lock_url, stored, ticket_of

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def bob(make_staff):
    return make_staff("bob", "view_customer", "change_customer")


def idle_page(client, obj):
    """Alice's page, gone idle: its lock released as its script does; what it needs to resume."""
    page = client.get(change_url(obj))
    config = page.context["dynalock"]["config"]
    ticket = ticket_of(page)
    assert client.post(config["releaseUrl"], {"ticket": str(ticket)}).json() == {"state": "released"}
    return {"ticket": str(ticket), "opened": config["opened"]}


def resume(client, obj, form):
    return client.post(edit_lock_url(obj, "resume"), form)


def test_the_page_is_told_the_idle_time_out(alice, customer, dynalock):
    config = logged_in(alice).get(change_url(customer)).context["dynalock"]["config"]
    assert config["idleSeconds"] == 900.0
    with override_settings(DYNALOCK={**dynalock, "EDIT_IDLE_TIMEOUT": None}):
        config = logged_in(alice).get(change_url(customer)).context["dynalock"]["config"]
    assert config["idleSeconds"] is None


@pytest.mark.parametrize(
    ("changes", "lease", "idle"),
    [
        ({"EDIT_IDLE_TIMEOUT": math.inf}, 60.0, None),  # endless: never idle
        ({"EDIT_IDLE_TIMEOUT": math.nan}, 60.0, None),
        ({"EDIT_IDLE_TIMEOUT": 30 * 86400}, 60.0, MAX_PAGE_SECONDS),  # past a browser timer's 24.8 days
        ({"EDIT_LEASE_DURATION": math.inf}, MAX_PAGE_SECONDS, 900.0),
        ({"EDIT_LEASE_DURATION": 10**12}, MAX_PAGE_SECONDS, 900.0),
    ],
)
def test_durations_past_what_a_page_can_time_open_a_page_with_only_finite_numbers(
    alice, customer, dynalock, changes, lease, idle
):
    """Check E014/E018 refuses these settings; a project that runs anyway still gets working pages."""
    with override_settings(DYNALOCK={**dynalock, **changes}):
        page = logged_in(alice).get(change_url(customer))
        assert page.status_code == 200
        config = page.context["dynalock"]["config"]
        assert (config["leaseSeconds"], config["idleSeconds"]) == (lease, idle)
        assert config["renewSeconds"] == lease / 3
        script = re.search(r'<script id="dynalock-edit-lock" type="application/json">(.*?)</script>', page.text)
        assert script is not None
        json.loads(script[1], parse_constant=refuse)  # no Infinity or NaN: the page's script would never run
        assert stored(customer).lease_duration == lease


def refuse(constant):
    raise AssertionError(f"{constant} in the page's JSON")


def test_continue_editing_takes_the_free_lock_again_in_one_write(alice, customer, requests_made):
    client = logged_in(alice)
    form = idle_page(client, customer)
    requests_made.reset()

    answer = resume(client, customer, form).json()

    assert answer["state"] == "held"
    assert requests_made.calls == {"UpdateItem": 1}
    new_ticket = answer["ticket"]
    assert new_ticket != form["ticket"]
    assert not stored(customer).is_released
    saved = client.post(change_url(customer), customer_form(new_ticket, name="Acme Corp"))
    assert saved.status_code == 302  # the resumed page saves with its new ticket
    customer.refresh_from_db()
    assert customer.name == "Acme Corp"


def test_while_someone_else_edits_the_page_is_told_who_and_stays_idle(alice, bob, customer):
    alices = logged_in(alice)
    form = idle_page(alices, customer)
    logged_in(bob).get(change_url(customer))

    answer = resume(alices, customer, form).json()

    assert answer["state"] == "busy"
    assert "Being edited by bob since" in answer["message"]
    assert "ticket" not in answer


def test_a_save_by_someone_else_meanwhile_is_named_and_never_overwritten(
    alice, bob, customer, django_capture_on_commit_callbacks
):
    alices, bobs = logged_in(alice), logged_in(bob)
    form = idle_page(alices, customer)
    bobs_ticket = ticket_of(bobs.get(change_url(customer)))
    with django_capture_on_commit_callbacks(execute=True):  # his save's release
        assert bobs.post(change_url(customer), customer_form(bobs_ticket, name="Bob's Acme")).status_code == 302

    answer = resume(alices, customer, form).json()

    assert answer["state"] == "changed"
    assert answer["message"].startswith("bob changed this at ")
    assert "ticket" not in answer
    assert stored(customer).is_released  # taken to look, and let go again
    refused = alices.post(change_url(customer), customer_form(form["ticket"], name="Alice's Acme"))
    assert refused.status_code == 200  # the old ticket saves nothing
    customer.refresh_from_db()
    assert customer.name == "Bob's Acme"


def test_a_save_through_another_admin_of_the_same_rows_counts_as_a_change(
    make_staff, django_capture_on_commit_callbacks
):
    """A proxy model's admin logs under its own content type; Tag has no fencing token to tell instead."""
    tag = Tag.objects.create(slug="red", label="Red")
    alices = logged_in(make_staff("alice", "view_tag", "change_tag"))
    bobs = logged_in(make_staff("bob", "view_tagproxy", "change_tagproxy"))
    form = idle_page(alices, tag)
    proxied = TagProxy.objects.get(pk=tag.pk)
    bobs_ticket = ticket_of(bobs.get(change_url(proxied)))
    with django_capture_on_commit_callbacks(execute=True):  # his save's release
        saved = bobs.post(change_url(proxied), {"slug": "red", "label": "Crimson", TICKET_FIELD: str(bobs_ticket)})
    assert saved.status_code == 302

    answer = resume(alices, tag, form).json()

    assert answer["state"] == "changed"
    assert answer["message"].startswith("bob changed this at ")
    assert "ticket" not in answer  # alice's page, still showing "Red", may not save over it
    tag.refresh_from_db()
    assert tag.label == "Crimson"


@pytest.mark.parametrize(
    ("model", "expected"),
    [(Tag, {Tag, TagProxy}), (TagProxy, {Tag, TagProxy}), (PremiumAccount, {Account, AccountProxy, PremiumAccount})],
)
def test_the_models_of_one_row_are_its_proxies_parents_and_children(model, expected):
    assert set(same_row_models(model)) == expected


def test_a_fenced_write_outside_the_admin_counts_as_a_change(alice, customer, django_capture_on_commit_callbacks):
    client = logged_in(alice)
    form = idle_page(client, customer)
    with django_capture_on_commit_callbacks(execute=True), lock_object(customer) as lease:
        customer.plan = "free"
        fenced_save(customer, lease)

    answer = resume(client, customer, form).json()

    assert answer["state"] == "changed"
    assert answer["message"] == "Someone changed this since you opened the page."


def test_a_renewal_after_the_release_does_not_bring_the_lock_back(alice, bob, customer):
    alices = logged_in(alice)
    form = idle_page(alices, customer)
    assert alices.post(edit_lock_url(customer, "renew"), {"ticket": form["ticket"]}).status_code == 409
    assert stored(customer).is_released
    logged_in(bob).get(change_url(customer))
    bobs = stored(customer)
    assert alices.post(edit_lock_url(customer, "renew"), {"ticket": form["ticket"]}).status_code == 409
    assert stored(customer).owner_name == bobs.owner_name


@pytest.mark.parametrize("opened", ["", "1700000000", "forged:signature"])
def test_resume_needs_the_pages_signed_opening_time(alice, customer, opened):
    client = logged_in(alice)
    form = idle_page(client, customer)
    assert resume(client, customer, {**form, "opened": opened}).status_code == 400


def test_resume_is_a_csrf_checked_post_needing_the_change_permission(alice, make_staff, customer):
    form = idle_page(logged_in(alice), customer)
    checked = browser(alice)
    assert checked.get(edit_lock_url(customer, "resume")).status_code == 405
    assert checked.post(edit_lock_url(customer, "resume"), form).status_code == 403  # no CSRF token
    assert checked.post(edit_lock_url(customer, "resume"), with_token(form)).json()["state"] == "held"
    viewer = make_staff("vera", "view_customer")
    assert logged_in(viewer).post(edit_lock_url(customer, "resume"), form).status_code == 403
