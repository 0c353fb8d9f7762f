"""``lock_object(row, reentrant=True)`` and ``@requires_lock(..., reentrant=True)``: code already holding a row's
lock in the same thread or task shares the hold; without ``reentrant`` it is refused at once."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.http import JsonResponse
from django.urls import path

from dynalock_django import lock_object, requires_lock, signals
from dynalock_django.client import get_client
from dynalock_django.exceptions import InvalidLockRequest, WouldDeadlock
from dynalock_django.keys import key_for_instance

from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]


@requires_lock(Account, reentrant=True)
def edit(request, pk):
    return JsonResponse({"token": request.lock_lease.fencing_token, "reentered": request.lock_lease.reentered})


@requires_lock(Account)
def edit_plain(request, pk):
    return JsonResponse({"token": request.lock_lease.fencing_token})


urlpatterns = [path("accounts/<int:pk>/", edit), path("plain/<int:pk>/", edit_plain)]


@pytest.fixture
def account():
    return Account.objects.create(name="Acme")


def test_a_nested_reentrant_lock_object_shares_the_rows_hold(account, requests_made):
    acquired: list[int] = []

    def on_acquired(sender, lease, **kwargs):
        acquired.append(lease.fencing_token)

    signals.lease_acquired.connect(on_acquired)
    try:
        with lock_object(account) as outer:
            requests_made.reset()
            with lock_object(account, reentrant=True, purpose="nested") as inner:
                assert inner.fencing_token == outer.fencing_token
            assert requests_made.total == 0  # taken and given back without a request
            assert not get_client().get(key_for_instance(account)).is_released  # the outer block holds it still
            with pytest.raises(WouldDeadlock, match="reentrant=True"):
                lock_object(account, timeout=30).acquire()  # its own lock: refused at once, not waited for
    finally:
        signals.lease_acquired.disconnect(on_acquired)
    assert acquired == [outer.fencing_token]  # one hold, one signal
    assert get_client().get(key_for_instance(account)).is_released


def test_async_with_a_reentrant_lock_object_inside_the_same_task():
    async def main(account: Account) -> None:
        async with lock_object(account) as outer:
            async with lock_object(account, reentrant=True) as inner:
                assert inner.fencing_token == outer.fencing_token
            assert outer.is_held()
        assert outer.state == "released"

    asyncio.run(main(Account.objects.create(name="Acme")))


def test_a_readers_lock_is_not_reentrant(account):
    with pytest.raises(InvalidLockRequest, match="drop reentrant=True"):
        lock_object(account, shared=True, reentrant=True)


def test_a_reentrant_view_called_under_the_rows_lock_runs_in_its_hold(rf, account):
    with lock_object(account) as outer:
        response = edit(rf.get(f"/accounts/{account.pk}/"), pk=account.pk)
        assert response.status_code == 200
        assert json.loads(response.content) == {"token": outer.fencing_token, "reentered": True}
        refused = edit_plain(rf.get(f"/plain/{account.pk}/"), pk=account.pk)
        assert refused.status_code == 423  # WouldDeadlock is a LockNotAcquired: refused, not waited out
        assert outer.is_held()


def test_a_reentrant_view_takes_the_lock_as_usual_when_nothing_holds_it(client, account):
    response = client.get(f"/accounts/{account.pk}/")
    assert response.status_code == 200
    assert response.json()["reentered"] is False
    assert get_client().get(key_for_instance(account)).is_released
