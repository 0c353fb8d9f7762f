"""A lock taken inside a transaction is released when the transaction ends, not before."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, transaction
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from django.urls import path

from dynalock_django import lock_object, lock_objects, requires_lock
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.testing import locks_in_memory

from ..dynamodb_support import PATIENCE
from .testapp.models import Account

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.uses_dynalock]


class Rollback(Exception):
    pass


def is_released(account):
    return get_client().get(key_for_instance(account)).is_released


@pytest.fixture(autouse=True)
def patient_leases(dynalock):
    """Leases no loaded machine's pause runs out (1 s ones did: before a force-release, whose loss is the one
    asserted; and inside a view, whose release at commit then failed): what the module asserts is when locks are
    released, not their renewal. The heartbeat stays short: it is how a holder hears of a loss within PATIENCE."""
    with override_settings(DYNALOCK={**dynalock, "LEASE_DURATION": 60.0}):
        yield


def test_released_only_after_commit():
    account = Account.objects.create(name="Acme")
    with transaction.atomic():
        with lock_object(account):
            Account.objects.filter(pk=account.pk).update(balance=10)
        assert not is_released(account)  # the update is not visible to others yet
    assert is_released(account)


def test_released_when_the_transaction_rolls_back():
    account = Account.objects.create(name="Acme")
    with pytest.raises(Rollback), transaction.atomic():
        with lock_object(account):
            pass
        assert not is_released(account)
        raise Rollback
    assert is_released(account)


def test_released_when_its_savepoint_rolls_back_while_the_outer_transaction_goes_on():
    account = Account.objects.create(name="Acme")
    with transaction.atomic():
        with pytest.raises(Rollback), transaction.atomic():
            with lock_object(account):
                pass
            raise Rollback
        assert is_released(account)


def test_a_release_unanswered_after_the_commit_is_not_reported_as_a_lost_lock(caplog):
    account = Account.objects.create(name="Acme")
    with locks_in_memory() as memory, transaction.atomic():  # on the virtual clock: no renewal in between
        with lock_object(account) as lease:
            Account.objects.filter(pk=account.pk).update(balance=10)
        memory.faults.lose_answers(1)  # the release after the commit: carried out, its answer lost
    assert Account.objects.get(pk=account.pk).balance == 10
    assert lease.release_unconfirmed
    assert "was lost" not in caplog.text  # it was not: it frees itself within one lease


def test_a_lock_lost_before_its_transaction_commits_is_logged_and_the_commit_goes_through(other_holder, caplog):
    account = Account.objects.create(name="Acme")
    with transaction.atomic():
        with lock_object(account) as lease:
            Account.objects.filter(pk=account.pk).update(balance=10)
        other_holder.force_release(other_holder.get(lease.key), released_by="ops")
        assert lease.wait_until_lost(PATIENCE)
        assert "was released by" in lease.lost_reason  # the operator's release, not a lease run out
    assert Account.objects.get(pk=account.pk).balance == 10  # nobody is left to raise to at commit
    assert f"Lock {lease.key!r} was lost before its transaction ended" in caplog.text
    assert get_client().get(lease.key).released_by == "ops"  # our late release changed nothing


def test_a_group_member_lost_before_its_transaction_commits_is_logged_and_the_others_released(other_holder, caplog):
    acme, globex = Account.objects.create(name="Acme"), Account.objects.create(name="Globex")
    with transaction.atomic():
        with lock_objects(acme, globex) as group:
            Account.objects.filter(pk__in=[acme.pk, globex.pk]).update(balance=10)
        lost = group[key_for_instance(acme)]
        other_holder.force_release(other_holder.get(lost.key), released_by="ops")
        assert lost.wait_until_lost(PATIENCE)
        assert "was released by" in lost.lost_reason
    assert Account.objects.get(pk=globex.pk).balance == 10  # nobody is left to raise to at commit
    assert f"Lock {lost.key!r} was lost before its transaction ended" in caplog.text
    assert key_for_instance(globex) not in caplog.text  # only the lost member is named
    assert is_released(globex)
    assert get_client().get(lost.key).released_by == "ops"  # our late release changed nothing


def test_outside_a_transaction_released_at_the_end_of_the_block():
    account = Account.objects.create(name="Acme")
    with lock_object(account):
        pass
    assert is_released(account)


def locked_view(request, pk):
    with lock_object(Account.objects.get(pk=pk)):
        pass
    state = "held" if not is_released(Account(pk=pk)) else "released"
    return HttpResponse(state)


@requires_lock(Account)
def decorated_view(request, pk):
    return HttpResponse("ok")


urlpatterns = [path("locked/<int:pk>/", locked_view), path("decorated/<int:pk>/", decorated_view)]


@pytest.mark.urls(__name__)
def test_atomic_requests_keep_the_lock_until_the_response_is_committed(client, monkeypatch):
    account = Account.objects.create(name="Acme")
    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)
    response = client.get(f"/locked/{account.pk}/")
    assert response.content == b"held"  # inside the view's transaction
    assert is_released(account)  # after it committed


@pytest.mark.urls(__name__)
def test_atomic_requests_with_the_decorator_release_after_commit(monkeypatch):
    account = Account.objects.create(name="Acme")
    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)
    request = RequestFactory().get("/")
    with transaction.atomic():  # what ATOMIC_REQUESTS wraps the view in
        assert decorated_view(request, pk=account.pk).status_code == 200
        assert not is_released(account)
    assert is_released(account)


def test_a_coroutine_run_inside_an_atomic_block_releases_when_it_commits():
    account = Account.objects.create(name="Acme")

    async def locked() -> None:
        async with lock_object(account):
            pass

    with transaction.atomic():
        async_to_sync(locked)()  # the coroutine runs on another thread; the transaction is this one's
        assert not is_released(account)
    assert is_released(account)
