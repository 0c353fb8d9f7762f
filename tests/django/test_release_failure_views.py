"""Views whose work is done when the release gets no answer answer with their own response, not 503 (issue 31).

Following a 503's "try again" would record the payment twice. Each view records its work, then
DynamoDB stops answering: @requires_lock (sync and async) and a view locking by hand under
LockErrorsMiddleware answer with the view's response; the lock frees itself within one lease.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.http import HttpResponse
from django.test import override_settings
from django.urls import path

from dynalock_django import lock_object, requires_lock
from dynalock_django.signals import lease_release_failed
from dynalock_django.testing import LocksInMemory, locks_in_memory

from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

MIDDLEWARE = ["dynalock_django.middleware.LockErrorsMiddleware"]
paid: list[str] = []
OUTAGE: dict[str, Any] = {}


def pay(how: str) -> HttpResponse:
    paid.append(how)
    OUTAGE["start"]()  # the payment is recorded: now DynamoDB stops answering, before the release
    return HttpResponse(f"paid ({how})")


@requires_lock(Account)
def decorated(request, pk):
    return pay("decorated")


@requires_lock(Account)
async def decorated_async(request, pk):
    return pay("async")


def by_hand(request, pk):
    with lock_object(Account.objects.get(pk=pk), timeout=0):
        return pay("by hand")


urlpatterns = [
    path("decorated/<int:pk>/", decorated),
    path("async/<int:pk>/", decorated_async),
    path("by-hand/<int:pk>/", by_hand),
]


@pytest.fixture
def memory() -> Iterator[LocksInMemory]:
    paid.clear()
    failed: list[str] = []

    def receiver(sender: str, **kwargs: Any) -> None:
        failed.append(sender)

    with locks_in_memory() as memory:
        OUTAGE["start"] = memory.faults.hang
        OUTAGE["failed"] = failed
        lease_release_failed.connect(receiver)
        try:
            yield memory
        finally:
            lease_release_failed.disconnect(receiver)
            memory.faults.heal()


@pytest.mark.parametrize(("url", "how"), [("decorated", "decorated"), ("async", "async")])
def test_requires_lock_answers_with_the_views_response_when_the_release_gets_no_answer(client, memory, url, how):
    account = Account.objects.create(name="Acme")
    response = client.get(f"/{url}/{account.pk}/")
    assert response.status_code == 200
    assert response.content == f"paid ({how})".encode()
    assert paid == [how]
    assert len(OUTAGE["failed"]) == 1
    assert memory.client.held_leases() == []  # no longer renewed: it frees itself within one lease


@override_settings(MIDDLEWARE=MIDDLEWARE)
def test_a_view_locking_by_hand_under_the_middleware_answers_with_its_response(client, memory):
    account = Account.objects.create(name="Acme")
    response = client.get(f"/by-hand/{account.pk}/")
    assert response.status_code == 200
    assert response.content == b"paid (by hand)"
    assert paid == ["by hand"]
