"""Force release from the live-locks page: only a CSRF-checked POST releases, and only the holding confirmed."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.test import override_settings

from dynalock_django import lock_key
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_name

from ...dynamodb_support import FaultInjector, make_dynamodb, short_lease_client
from ..admin_support import RELEASE, browser, held_by, release_form, with_token

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def carol(make_staff):
    return make_staff("carol", "view_lock", "force_release")


@pytest.mark.parametrize("method", ["head", "options", "trace", "put", "patch", "delete"])
def test_no_method_but_post_releases_anything(carol, method):
    lock = held_by("job-host", "nightly")
    client = browser(carol)
    response = getattr(client, method)(f"{RELEASE}?key=nightly&owner=job-host&fencing_token=7")
    assert response.status_code in (200, 403, 405)  # HEAD shows the confirmation; CSRF or the method refuses others
    assert not get_client().get("nightly").is_released
    assert not LogEntry.objects.exists()
    assert client.post(RELEASE, {"key": "nightly", "owner": "job-host", "fencing_token": "7"}).status_code == 403
    assert client.post(RELEASE, release_form(lock)).status_code == 302  # a POST with its CSRF token does
    assert get_client().get("nightly").is_released


def test_the_release_is_of_the_holding_confirmed_not_of_whoever_holds_it_now(carol):
    alices = held_by("alice-host", "report", token="1")
    client = browser(carol)
    confirmation = client.get(RELEASE, {"key": "report"})
    assert confirmation.context["holding"] == ("alice-host", "1")
    held_by("bob-host", "report", token="2")  # alice released, bob took it, before carol clicked

    response = client.post(RELEASE, release_form(alices), follow=True)

    stored = get_client().get("report")
    assert not stored.is_released
    assert stored.owner_name == "bob-host"
    assert "Nothing was released: bob-host holds the lock on report now." in response.content.decode()
    assert response.context["holding"] == ("bob-host", "2")  # back on the confirmation, of bob's holding
    assert not LogEntry.objects.exists()


@pytest.fixture
def patient_holder(dynalock):
    """Another process's client whose lease no loaded machine's pause runs out (a 1 s one was lost during the POST)."""
    client = short_lease_client(
        make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"], lease_duration=60.0, heartbeat_period=20.0
    )
    yield client
    client.close(release=False)


def test_an_old_confirmation_cannot_release_a_newer_holding_of_the_same_owner(carol, patient_holder):
    """A client keeps its owner name across release and re-acquire: the fencing token tells the holdings apart."""
    other_holder = patient_holder
    first = other_holder.acquire("report")
    client = browser(carol)
    confirmation = client.get(RELEASE, {"key": "report"})
    assert confirmation.context["holding"] == (other_holder.owner_name, str(first.fencing_token))
    old_form = release_form(get_client().get("report"))
    first.release()
    second = other_holder.acquire("report")  # the same owner again, a newer holding, before carol clicked
    assert second.fencing_token > first.fencing_token

    response = client.post(RELEASE, old_form, follow=True)

    stored = get_client().get("report")
    assert not stored.is_released
    assert stored.fencing_token == second.fencing_token
    assert second.is_held()
    assert "Nothing was released" in response.content.decode()
    assert response.context["holding"] == (other_holder.owner_name, str(second.fencing_token))
    assert not LogEntry.objects.exists()
    second.release()


@pytest.mark.parametrize(
    "key",
    [
        "desk.customer:nightly",  # a lock_key name that reads like a model key
        "testapp.ticket:not-a-uuid",
        "testapp.membership:only-one-part",
        "desk.customer:99999999999999999999999",
    ],
)
def test_keys_that_name_no_row_are_released_and_logged_against_the_lock(carol, key):
    lock = held_by("job-host", key)
    response = browser(carol).post(RELEASE, release_form(lock))
    assert response.status_code == 302
    assert get_client().get(key).is_released
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.content_type.model) == (key, "lock")


def test_an_oversized_key_is_a_bad_request(carol):
    client = browser(carol)
    assert client.get(RELEASE, {"key": "k" * 2049}).status_code == 400
    assert client.post(RELEASE, with_token({"key": "k" * 2049})).status_code == 400


def test_dynamodb_failures_answer_503_with_a_reference_not_aws_text(carol, caplog):
    lock = held_by("job-host", "nightly")
    faults = FaultInjector(get_client().dynamodb)
    client = browser(carol)
    faults.fail("GetItem", "InternalFailure", status=400)
    page = client.get(RELEASE, {"key": "nightly"})
    assert page.status_code == 503
    assert "quoting reference" in page.content.decode()
    assert "injected" not in page.content.decode()  # the AWS message
    assert "injected" in caplog.text
    faults.fail("UpdateItem", "ThrottlingException", times=5)
    assert client.post(RELEASE, release_form(lock)).status_code == 503
    assert not get_client().get("nightly").is_released


def test_other_applications_keys_are_out_of_reach_unless_configured(carol, dynalock):
    with override_settings(DYNALOCK={**dynalock, "KEY_PREFIX": "crm:"}):
        ours = lock_key("nightly").acquire()
        theirs = held_by("billing-host", "billing:nightly")
        client = browser(carol)
        refused = client.post(RELEASE, release_form(theirs), follow=True)
        assert "belongs to another project that shares the lock table" in refused.content.decode()
        assert not get_client().get("billing:nightly").is_released
        assert client.post(RELEASE, release_form(get_client().get(key_for_name("nightly")))).status_code == 302
        assert ours.key == "crm:nightly"
    with override_settings(DYNALOCK={**dynalock, "KEY_PREFIX": "crm:", "ADMIN_SHOWS_ALL_KEYS": True}):
        assert browser(carol).post(RELEASE, release_form(theirs)).status_code == 302
        assert get_client().get("billing:nightly").is_released
