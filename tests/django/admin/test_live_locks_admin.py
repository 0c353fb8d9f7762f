"""The admin's live-locks page and force release: permissions, CSRF, what it shows."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.test import override_settings

from dynalock_django import lock_key, lock_object
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from ...dynamodb_support import PATIENCE
from ..admin_support import LIVE_LOCKS, RELEASE, logged_in, put_item

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def viewer(make_staff):
    return make_staff("vera", "view_lock", "view_customer")


@pytest.fixture
def releaser(make_staff):
    return make_staff("carol", "view_lock", "force_release")


def confirmed(client, key):
    """The release form as its confirmation page fills it in: the key and the holding shown."""
    page = client.get(RELEASE, {"key": key})
    owner, fencing_token = page.context["holding"]
    return {"key": key, "owner": owner, "fencing_token": fencing_token}


def test_anonymous_users_go_to_the_login_page(client):
    assert client.get(LIVE_LOCKS).status_code == 302


def test_staff_without_the_view_permission_are_refused(make_staff):
    assert logged_in(make_staff("sam")).get(LIVE_LOCKS).status_code == 403


def test_non_staff_with_the_permission_are_refused(make_staff):
    user = make_staff("nina", "view_lock", is_staff=False)
    assert logged_in(user).get(LIVE_LOCKS).status_code == 302


def test_the_live_locks_page_shows_who_holds_what_with_a_link_to_the_object(viewer, customer, django_user_model):
    alice = django_user_model.objects.create_user("alice")
    with lock_object(customer, purpose="edit", user=alice) as lease, lock_key("nightly-billing", purpose="job"):
        page = logged_in(viewer).get(LIVE_LOCKS)
    assert page.status_code == 200
    html = page.content.decode()
    assert f'href="/admin/desk/customer/{customer.pk}/change/"' in html
    assert "Acme" in html
    assert "alice" in html
    assert "nightly-billing" in html
    assert str(lease.fencing_token) in html
    assert "Release…" not in html  # no force-release permission


def test_the_live_locks_page_filters_by_model_holder_and_key(viewer, customer, django_user_model):
    bob = django_user_model.objects.create_user("bob")
    with lock_object(customer, user=bob), lock_key("nightly-billing"), lock_key("nightly-reports"):
        client = logged_in(viewer)
        by_model = client.get(LIVE_LOCKS, {"model": "desk.customer"}).content.decode()
        by_holder = client.get(LIVE_LOCKS, {"holder": "bob"}).content.decode()
        by_key = client.get(LIVE_LOCKS, {"q": "nightly-r"}).content.decode()
    assert "Acme" in by_model
    assert "nightly" not in by_model
    assert "Acme" in by_holder
    assert "nightly" not in by_holder
    assert "nightly-reports" in by_key
    assert "nightly-billing" not in by_key


def test_the_live_locks_page_pages_through_the_table_with_dynamodbs_cursor(viewer, monkeypatch):
    from dynalock_django.admin import LiveLocksAdmin

    monkeypatch.setattr(LiveLocksAdmin, "list_per_page", 2)
    leases = [lock_key(f"job-{i}").acquire() for i in range(5)]
    client = logged_in(viewer)
    seen, params = set(), {}
    for _ in range(5):
        page = client.get(LIVE_LOCKS, params)
        seen |= {f"job-{i}" for i in range(5) if f"job-{i}<" in page.content.decode()}
        if page.context["page"].next_cursor is None:
            break
        params = {"cursor": page.context["page"].next_cursor}
    assert seen == {f"job-{i}" for i in range(5)}
    for lease in leases:
        lease.release()


def test_released_locks_are_hidden_unless_asked_for(viewer):
    lock_key("done-job").acquire().release()
    client = logged_in(viewer)
    assert "done-job" not in client.get(LIVE_LOCKS).content.decode()
    assert "done-job" in client.get(LIVE_LOCKS, {"status": "all"}).content.decode()


@pytest.mark.parametrize("live", [True, False])
def test_a_malformed_item_is_shown_as_such(viewer, live):
    """Marked live, the index lists it; written by another client (unmarked), the "other clients" filter finds it."""
    put_item({"key": {"S": "garbage"}, "leaseDuration": {"S": "soon"}}, live=live)
    client = logged_in(viewer)
    html = client.get(LIVE_LOCKS, {} if live else {"other_clients": "1"}).content.decode()
    assert "garbage" in html
    assert "malformed" in html
    assert ("garbage" in client.get(LIVE_LOCKS).content.decode()) is live


def test_the_fragment_is_the_table_alone_for_the_auto_refresh(viewer):
    with lock_key("job"):
        fragment = logged_in(viewer).get(LIVE_LOCKS, {"fragment": "1"})
    assert fragment.templates[0].name == "admin/dynalock_django/live_locks/rows.html"
    assert b"<html" not in fragment.content
    assert b"job" in fragment.content


def test_a_missing_table_is_said_on_the_page(viewer, dynalock):
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "no-such-table"}):
        page = logged_in(viewer).get(LIVE_LOCKS)
    assert page.status_code == 200
    html = page.content.decode()
    assert "The live locks cannot be shown. The lock table is missing or not set up for locks." in html
    assert "createtable" not in html  # how to create it is for whoever runs the site: in the log
    assert "no-such-table" not in html


def test_force_release_needs_its_own_permission(viewer):
    lease = lock_key("job").acquire()
    client = logged_in(viewer)
    assert client.get(RELEASE, {"key": "job"}).status_code == 403
    assert client.post(RELEASE, {"key": "job"}).status_code == 403
    assert lease.is_held()
    lease.release()


@pytest.fixture
def long_lease(dynalock):
    """A lease no loaded machine loses between two renewals; the heartbeat still comes every quarter second."""
    with override_settings(DYNALOCK={**dynalock, "LEASE_DURATION": 30.0}):
        yield


def test_force_release_confirms_who_holds_it_then_releases_and_logs(long_lease, releaser, customer, django_user_model):
    alice = django_user_model.objects.create_user("alice")
    lease = lock_object(customer, user=alice).acquire()
    client = logged_in(releaser)
    confirmation = client.get(RELEASE, {"key": lease.key}).content.decode()
    assert re.search(r"The lock on “Customer 1” is held by <strong>alice</strong>, taken at \d\d:\d\d\.", confirmation)
    assert lease.is_held()
    response = client.post(RELEASE, confirmed(client, lease.key))
    assert response.status_code == 302
    stored = get_client().get(key_for_instance(customer))
    assert stored.is_released
    assert stored.released_by == "carol"
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.user, entry.content_type.model) == (str(customer.pk), releaser, "customer")
    assert "alice" in entry.get_change_message()
    assert lease.wait_until_lost(PATIENCE)  # at its next renewal; patience for a loaded machine
    assert lease.lost_to.released_by == "carol"  # what the holder's page is told


def test_force_release_without_csrf_is_refused(releaser):
    lease = lock_key("job").acquire()
    response = logged_in(releaser, enforce_csrf_checks=True).post(RELEASE, {"key": "job"})
    assert response.status_code == 403
    assert lease.is_held()
    lease.release()


def test_force_release_of_a_named_lock_is_logged_against_the_lock(releaser):
    lease = lock_key("nightly-billing", data={"job": 1}).acquire()
    client = logged_in(releaser)
    client.post(RELEASE, confirmed(client, "nightly-billing"))
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.content_type.model) == ("nightly-billing", "lock")
    assert lease.wait_until_lost(PATIENCE)  # at its next renewal; patience for a loaded machine


def test_releasing_a_lock_nobody_holds_says_so(releaser):
    response = logged_in(releaser).post(RELEASE, {"key": "free"}, follow=True)
    assert b"Nobody holds this lock any more: there is nothing to release." in response.content


def test_a_holder_named_in_lock_data_is_shown(viewer, other_holder):
    held = other_holder.acquire("report", data=LockData(username="dora", purpose="export").to_bytes())
    html = logged_in(viewer).get(LIVE_LOCKS).content.decode()
    assert "dora" in html
    assert "export" in html
    held.release()


def model_choices(page):
    by_model = page.context["filters"][0]
    return [choice.display for choice in by_model.options]


def test_objects_of_models_the_viewer_may_not_view_stay_unnamed(make_staff, customer):
    boss = make_staff("the-boss-username", is_superuser=True)
    lock_only = make_staff("lena", "view_lock")
    with lock_object(boss, purpose="audit"), lock_object(customer):
        page = logged_in(lock_only).get(LIVE_LOCKS)
        html = page.content.decode()
        assert key_for_instance(boss) in html  # the key alone
        assert "the-boss-username" not in html
        assert f"/admin/auth/user/{boss.pk}/" not in html
        assert "Acme" not in html
        assert model_choices(page) == ["All"]
        seen = logged_in(make_staff("cora", "view_lock", "view_customer")).get(LIVE_LOCKS)
        assert "Acme" in seen.content.decode()
        assert "the-boss-username" not in seen.content.decode()
        assert model_choices(seen) == ["All", "Customers (1)"]  # the models on the page, with their counts


def test_the_live_locks_page_shows_only_this_projects_keys_unless_configured(viewer, dynalock):
    for key in ("crm:ours", "billing:theirs"):  # two applications sharing the table
        put_item(
            {
                "key": {"S": key},
                "ownerName": {"S": "x"},
                "leaseDuration": {"S": "60000"},
                "recordVersionNumber": {"S": "1"},
            }
        )
    with override_settings(DYNALOCK={**dynalock, "KEY_PREFIX": "crm:"}):
        scoped = logged_in(viewer).get(LIVE_LOCKS).content.decode()
    with override_settings(DYNALOCK={**dynalock, "KEY_PREFIX": "crm:", "ADMIN_SHOWS_ALL_KEYS": True}):
        unscoped = logged_in(viewer).get(LIVE_LOCKS).content.decode()
    assert "crm:ours" in scoped
    assert "billing:theirs" not in scoped
    assert "crm:ours" in unscoped
    assert "billing:theirs" in unscoped


def test_links_quote_the_pk_so_they_open_the_locked_row(make_staff):
    from tests.django.testapp.models import Tag

    viewer = make_staff("tess", "view_lock", "view_tag")
    quoted, slashed = Tag.objects.create(slug="x_2Fy"), Tag.objects.create(slug="x/y")
    with lock_object(quoted):
        html = logged_in(viewer).get(LIVE_LOCKS).content.decode()
    assert 'href="/admin/testapp/tag/x_5F2Fy/change/"' in html
    assert slashed.slug == "x/y"
    assert 'href="/admin/testapp/tag/x_2Fy/change/"' not in html  # that is the row "x/y"


def test_the_lock_models_inherited_admin_urls_are_gone_and_log_links_lead_to_the_live_locks_page(releaser):
    lease = lock_key("nightly/billing").acquire()
    client = logged_in(releaser)
    key = "nightly_2Fbilling"  # as the admin quotes it into a URL
    for suffix in ("history/", "delete/"):
        assert client.get(f"{LIVE_LOCKS}{key}/{suffix}").status_code == 404
    assert client.get(f"{LIVE_LOCKS}add/").status_code in (302, 404)  # never the add form
    client.post(RELEASE, confirmed(client, "nightly/billing"))
    entry = LogEntry.objects.get()
    assert entry.get_admin_url() == f"{LIVE_LOCKS}{key}/change/"
    landing = client.get(entry.get_admin_url(), follow=True)
    assert landing.status_code == 200
    assert landing.context["params"]["q"] == "nightly/billing"
    assert "nightly/billing" in landing.content.decode()
    assert lease.wait_until_lost(PATIENCE)  # at its next renewal; patience for a loaded machine


def test_an_unmapped_dynamodb_error_shows_a_reference_not_its_text(viewer, caplog):
    from ...dynamodb_support import FaultInjector

    faults = FaultInjector(get_client().dynamodb)
    secret = "arn:aws:dynamodb:us-east-1:123456789012:table/dynalock is not authorized"
    faults.fail("Scan", "ValidationException", message=secret)
    page = logged_in(viewer).get(LIVE_LOCKS)
    html = page.content.decode()
    assert "The lock service refused the request. Tell whoever runs this site, quoting reference" in html
    assert "123456789012" not in html
    reference = html.split("quoting reference ")[1][:8]
    assert f"reference {reference}" in caplog.text
    assert "123456789012" in caplog.text
