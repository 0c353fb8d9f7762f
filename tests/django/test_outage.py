"""A bad day for views: 503 with Retry-After from @requires_lock, and the opt-in LockErrorsMiddleware."""

from __future__ import annotations

import pytest
from django.http import HttpResponse
from django.test import override_settings
from django.urls import path

from dynalock_django import lock_object, requires_lock
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance

from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]

MIDDLEWARE = ["dynalock_django.middleware.LockErrorsMiddleware"]


@requires_lock(Account)
def decorated(request, pk):
    return HttpResponse("ran")


def by_hand(request, pk):
    with lock_object(Account.objects.get(pk=pk), timeout=0):
        return HttpResponse("ran")


urlpatterns = [path("decorated/<int:pk>/", decorated), path("by-hand/<int:pk>/", by_hand)]


@pytest.fixture
def account():
    return Account.objects.create(name="Acme")


@pytest.fixture
def dynamodb_down():
    """The process client's breaker, opened as calls without an answer open it: calls now fail at once."""
    breaker = get_client().breaker
    for _ in range(10):
        breaker.unanswered(ConnectionError("no answer"), probe=False)
    yield
    breaker.answered(probe=False)


def test_requires_lock_answers_503_with_retry_after_when_dynamodb_is_down(client, account, dynamodb_down):
    response = client.get(f"/decorated/{account.pk}/")
    assert response.status_code == 503
    assert 1 <= int(response["Retry-After"]) <= 6  # the breaker's cool-down (5 s by default), rounded up
    assert b"not answering" in response.content


def test_requires_lock_answers_503_as_json_to_json_clients(client, account, dynamodb_down):
    response = client.get(f"/decorated/{account.pk}/", HTTP_ACCEPT="application/json")
    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"


@override_settings(MIDDLEWARE=MIDDLEWARE)
def test_the_middleware_maps_dynamodb_unavailable_to_503(client, account, dynamodb_down):
    response = client.get(f"/by-hand/{account.pk}/")
    assert response.status_code == 503
    assert response["Retry-After"]


@override_settings(MIDDLEWARE=MIDDLEWARE)
def test_the_middleware_maps_lock_timeout_to_423_with_the_holder(client, account):
    lease = get_client().acquire(key_for_instance(account))
    try:
        response = client.get(f"/by-hand/{account.pk}/", HTTP_ACCEPT="application/json")
    finally:
        lease.release()
    assert response.status_code == 423
    assert response["Retry-After"]


def test_without_the_middleware_a_view_that_locks_by_hand_raises(client, account, dynamodb_down):
    client.raise_request_exception = True
    with pytest.raises(Exception, match="circuit breaker"):
        client.get(f"/by-hand/{account.pk}/")
