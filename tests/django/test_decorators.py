"""@requires_lock: the whole view under the object's lock; 423 with who holds it otherwise."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.http import HttpResponse, JsonResponse
from django.test import override_settings
from django.urls import path
from django.views import View

from dynalock_django import requires_lock
from dynalock_django.client import get_client
from dynalock_django.dynamodb import LockClient
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from ..dynamodb_support import LEASE
from .testapp.models import Account, Tag

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]


@requires_lock(Account)
def edit(request, pk):
    lease = request.lock_lease
    stored = get_client().get(lease.key)
    return JsonResponse({"token": lease.fencing_token, "held": not stored.is_released})


@requires_lock(Tag, lookup="slug", timeout=3.0)
def edit_tag(request, slug):
    return HttpResponse(request.lock_lease.key)


@requires_lock(Account, status=409)
async def edit_async(request, pk):
    return HttpResponse(f"async {request.lock_lease.fencing_token}")


@requires_lock(Account)
class EditView(View):
    def get(self, request, pk):
        return HttpResponse(f"class {request.lock_lease.key}")


urlpatterns = [
    path("accounts/<int:pk>/", edit),
    path("tags/<str:slug>/", edit_tag),
    path("async/<int:pk>/", edit_async),
    path("class/<int:pk>/", EditView.as_view()),
]


@pytest.fixture
def account():
    return Account.objects.create(name="Acme")


def hold_as_bob(client: LockClient, instance):
    data = LockData(purpose="edit", username="bob").to_bytes()
    return client.acquire(key_for_instance(instance), data=data)


def test_the_view_runs_holding_the_lock_and_releases_it_after(client, account):
    response = client.get(f"/accounts/{account.pk}/")
    assert response.status_code == 200
    assert response.json()["held"] is True
    assert get_client().get(key_for_instance(account)).is_released


@pytest.fixture
def member(client, django_user_model):
    """A logged-in client: the holder is named to logged-in users."""
    client.force_login(django_user_model.objects.create_user("mia"))
    return client


def test_contention_is_423_with_retry_after_and_the_holder_as_json(member, account, other_holder):
    held = hold_as_bob(other_holder, account)
    response = member.get(f"/accounts/{account.pk}/", headers={"accept": "application/json"})
    assert response.status_code == 423
    assert response["Retry-After"] == str(int(LEASE))
    body = response.json()
    assert body["error"] == "locked"
    assert body["holder"] == "bob"
    assert body["purpose"] == "edit"
    held.release()


def test_contention_for_a_browser_renders_the_template(member, account, other_holder):
    held = hold_as_bob(other_holder, account)
    response = member.get(f"/accounts/{account.pk}/", headers={"accept": "text/html"})
    assert response.status_code == 423
    assert "dynalock_django/locked.html" in [t.name for t in response.templates]
    assert b"bob has been editing it since" in response.content
    held.release()


def test_anonymous_requests_are_not_told_who_holds_the_lock_unless_configured(client, account, other_holder, dynalock):
    held = other_holder.acquire(key_for_instance(account))  # code: the host name and process id would show
    as_json = client.get(f"/accounts/{account.pk}/", headers={"accept": "application/json"})
    as_html = client.get(f"/accounts/{account.pk}/", headers={"accept": "text/html"})
    assert as_json.status_code == as_html.status_code == 423
    assert as_json.json()["holder"] is None
    assert as_json.json()["purpose"] == ""
    identity = other_holder.owner_name  # host name, process id and a random part
    assert identity not in as_json.content.decode()
    assert identity not in as_html.content.decode()
    assert b"Someone else has been working on it since" in as_html.content
    with override_settings(DYNALOCK={**dynalock, "SHOW_HOLDER_TO_ANONYMOUS": True}):
        told = client.get(f"/accounts/{account.pk}/", headers={"accept": "application/json"})
    assert told.json()["holder"] == identity
    held.release()


def test_the_contention_status_comes_from_settings(client, account, other_holder, dynalock):
    held = hold_as_bob(other_holder, account)
    with override_settings(DYNALOCK={**dynalock, "CONTENTION_STATUS": 409}):
        assert client.get(f"/accounts/{account.pk}/").status_code == 409
    held.release()


def test_a_missing_object_is_404(client):
    assert client.get("/accounts/999999/").status_code == 404


def test_lookup_by_slug_waits_for_the_lock_when_asked(client, other_holder):
    tag = Tag.objects.create(slug="vip")
    held = hold_as_bob(other_holder, tag)
    threading.Timer(0.3, held.release).start()
    response = client.get("/tags/vip/")
    assert response.status_code == 200
    assert response.content == key_for_instance(tag).encode()


@pytest.mark.django_db(transaction=True)  # the ORM runs in another thread: no test transaction to share
def test_an_async_view_runs_under_the_lock_and_answers_its_status_on_contention(async_client, account, other_holder):
    async def fetch():
        return await async_client.get(f"/async/{account.pk}/")

    assert asyncio.run(fetch()).content.startswith(b"async ")
    held = hold_as_bob(other_holder, account)
    assert asyncio.run(fetch()).status_code == 409
    held.release()


def test_a_class_based_view_runs_under_the_lock_and_is_423_on_contention(client, account, other_holder):
    assert client.get(f"/class/{account.pk}/").content == f"class {key_for_instance(account)}".encode()
    held = hold_as_bob(other_holder, account)
    assert client.get(f"/class/{account.pk}/").status_code == 423
    held.release()


def test_a_url_without_the_lookup_argument_is_a_clear_error(rf, account):
    @requires_lock(Account)
    def view(request, account_id):
        return HttpResponse()

    with pytest.raises(TypeError, match=r"no 'pk' argument.*url_kwarg"):
        view(rf.get("/"), account_id=account.pk)
