"""The admin's live-locks dashboard and force release: permissions, CSRF, what it shows."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.test import Client, override_settings

from dynalock_django import lock_key, lock_object
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData
from testproject.desk.models import Customer

from ..dynamodb_support import HEARTBEAT

pytestmark = pytest.mark.django_db
DASHBOARD = "/admin/dynalock_django/lock/"
RELEASE = "/admin/dynalock_django/lock/release/"


def staff_with(django_user_model, username, *codenames):
    user = django_user_model.objects.create_user(username, password="pw", is_staff=True)
    permissions = Permission.objects.filter(content_type__app_label="dynalock_django", codename__in=codenames)
    user.user_permissions.set(permissions)
    return user


@pytest.fixture
def viewer(django_user_model):
    return staff_with(django_user_model, "vera", "view_lock")


@pytest.fixture
def releaser(django_user_model):
    return staff_with(django_user_model, "carol", "view_lock", "force_release")


@pytest.fixture
def customer():
    return Customer.objects.create(name="Acme", plan="pro")


def logged_in(user, **options):
    client = Client(**options)
    client.force_login(user)
    return client


def test_anonymous_users_go_to_the_login_page(client):
    assert client.get(DASHBOARD).status_code == 302


def test_staff_without_the_view_permission_are_refused(django_user_model):
    assert logged_in(staff_with(django_user_model, "sam")).get(DASHBOARD).status_code == 403


def test_non_staff_with_the_permission_are_refused(django_user_model):
    user = staff_with(django_user_model, "nina", "view_lock")
    user.is_staff = False
    user.save()
    assert logged_in(user).get(DASHBOARD).status_code == 302


def test_the_dashboard_shows_who_holds_what_with_a_link_to_the_object(viewer, customer, django_user_model):
    alice = django_user_model.objects.create_user("alice")
    with lock_object(customer, purpose="edit", user=alice) as lease, lock_key("nightly-billing", purpose="job"):
        page = logged_in(viewer).get(DASHBOARD)
    assert page.status_code == 200
    html = page.content.decode()
    assert f'href="/admin/desk/customer/{customer.pk}/change/"' in html
    assert "Acme" in html
    assert "alice" in html
    assert "nightly-billing" in html
    assert str(lease.fencing_token) in html
    assert "Release…" not in html  # no force-release permission


def test_filters_by_model_holder_and_key(viewer, customer, django_user_model):
    bob = django_user_model.objects.create_user("bob")
    with lock_object(customer, user=bob), lock_key("nightly-billing"), lock_key("nightly-reports"):
        client = logged_in(viewer)
        by_model = client.get(DASHBOARD, {"model": "desk.customer"}).content.decode()
        by_holder = client.get(DASHBOARD, {"holder": "bob"}).content.decode()
        by_key = client.get(DASHBOARD, {"q": "nightly-r"}).content.decode()
    assert "Acme" in by_model
    assert "nightly" not in by_model
    assert "Acme" in by_holder
    assert "nightly" not in by_holder
    assert "nightly-reports" in by_key
    assert "nightly-billing" not in by_key


def test_pages_follow_dynamodb_pagination(viewer, monkeypatch):
    from dynalock_django.admin import LockAdmin

    monkeypatch.setattr(LockAdmin, "list_per_page", 2)
    leases = [lock_key(f"job-{i}").acquire() for i in range(5)]
    client = logged_in(viewer)
    seen, params = set(), {}
    for _ in range(5):
        page = client.get(DASHBOARD, params)
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
    assert "done-job" not in client.get(DASHBOARD).content.decode()
    assert "done-job" in client.get(DASHBOARD, {"status": "all"}).content.decode()


def test_a_malformed_item_is_shown_as_such(viewer, dynalock):
    get_client().dynamodb.put_item(
        TableName=dynalock["TABLE_NAME"], Item={"key": {"S": "garbage"}, "leaseDuration": {"S": "soon"}}
    )
    html = logged_in(viewer).get(DASHBOARD).content.decode()
    assert "garbage" in html
    assert "malformed" in html


def test_the_fragment_is_the_table_alone_for_the_auto_refresh(viewer):
    with lock_key("job"):
        fragment = logged_in(viewer).get(DASHBOARD, {"fragment": "1"})
    assert fragment.templates[0].name == "admin/dynalock_django/lock/rows.html"
    assert b"<html" not in fragment.content
    assert b"job" in fragment.content


def test_a_missing_table_is_said_on_the_page(viewer, dynalock):
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "no-such-table"}):
        page = logged_in(viewer).get(DASHBOARD)
    assert page.status_code == 200
    assert b"createtable" in page.content or b"does not exist" in page.content


def test_force_release_needs_its_own_permission(viewer):
    lease = lock_key("job").acquire()
    client = logged_in(viewer)
    assert client.get(RELEASE, {"key": "job"}).status_code == 403
    assert client.post(RELEASE, {"key": "job"}).status_code == 403
    assert lease.is_held()
    lease.release()


def test_force_release_confirms_who_holds_it_then_releases_and_logs(releaser, customer, django_user_model):
    alice = django_user_model.objects.create_user("alice")
    lease = lock_object(customer, user=alice).acquire()
    client = logged_in(releaser)
    confirmation = client.get(RELEASE, {"key": lease.key}).content.decode()
    assert "held by <strong>alice</strong>" in confirmation
    assert lease.is_held()
    response = client.post(RELEASE, {"key": lease.key})
    assert response.status_code == 302
    stored = get_client().get(key_for_instance(customer))
    assert stored.is_released
    assert stored.released_by == "carol"
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.user, entry.content_type.model) == (str(customer.pk), releaser, "customer")
    assert "alice" in entry.get_change_message()
    assert lease.wait_until_lost(HEARTBEAT + 0.5)
    assert lease.lost_to.released_by == "carol"  # what the holder's page is told


def test_force_release_without_csrf_is_refused(releaser):
    lease = lock_key("job").acquire()
    response = logged_in(releaser, enforce_csrf_checks=True).post(RELEASE, {"key": "job"})
    assert response.status_code == 403
    assert lease.is_held()
    lease.release()


def test_force_release_of_a_named_lock_is_logged_against_the_lock(releaser):
    lease = lock_key("nightly-billing", data={"job": 1}).acquire()
    logged_in(releaser).post(RELEASE, {"key": "nightly-billing"})
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.content_type.model) == ("nightly-billing", "lock")
    assert lease.wait_until_lost(HEARTBEAT + 0.5)


def test_releasing_a_lock_nobody_holds_says_so(releaser):
    response = logged_in(releaser).post(RELEASE, {"key": "free"}, follow=True)
    assert b"not held any more" in response.content


def test_a_holder_named_in_lock_data_is_shown(viewer, other_holder):
    held = other_holder.acquire("report", data=LockData(username="dora", purpose="export").to_bytes())
    html = logged_in(viewer).get(DASHBOARD).content.decode()
    assert "dora" in html
    assert "export" in html
    held.release()
