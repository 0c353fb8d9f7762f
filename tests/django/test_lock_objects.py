"""lock_objects: many rows locked at once, all or none, against the real local endpoint."""

from __future__ import annotations

import asyncio
import time

import pytest
from django.db import transaction

from dynalock_django import fenced_refresh, fenced_save, lock_object, lock_objects
from dynalock_django.client import get_client
from dynalock_django.exceptions import InvalidLockRequest, LockNotAcquired, LockTimeout, StaleFencingToken
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from .admin_support import held
from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def accounts():
    return [Account.objects.create(name=name) for name in ("Acme", "Globex", "Initech")]


def test_the_block_holds_every_row_and_says_who_holds_them(accounts, django_user_model):
    alice = django_user_model.objects.create_user("alice")
    with lock_objects(*accounts, purpose="merge", user=alice) as group:
        assert all(held(account) for account in accounts)
        assert group.is_held()
        for account in accounts:
            stored = get_client().get(key_for_instance(account))
            assert group.fencing_tokens[key_for_instance(account)] == stored.fencing_token
            data = LockData.from_bytes(stored.data)
            assert (data.purpose, data.username) == ("merge", "alice")
    assert not any(held(account) for account in accounts)
    assert not group.is_held()


@pytest.mark.requires("transactions")
def test_free_rows_are_locked_in_one_transaction_and_released_in_another(accounts, requests_made):
    with lock_objects(*accounts):
        # The transaction returns no values: one read fetches the fencing tokens it wrote.
        assert dict(requests_made.calls) == {"TransactWriteItems": 1, "BatchGetItem": 1}
        requests_made.reset()
    assert dict(requests_made.calls) == {"TransactWriteItems": 1}


def test_querysets_are_read_when_the_lock_is_taken(accounts):
    rows = Account.objects.filter(name__in=["Acme", "Globex"])
    lock = lock_objects(rows, accounts[0])  # a row named twice is locked once
    late = Account.objects.create(name="Acme")  # created after the call, before the lock is taken
    with lock as group:
        assert sorted(group.fencing_tokens) == sorted(key_for_instance(a) for a in [*accounts[:2], late])
        assert not held(accounts[2])


def test_all_or_none_without_blocking_the_refusal_names_the_holder(accounts, other_holder):
    data = LockData(purpose="edit", username="bob").to_bytes()
    bobs = other_holder.acquire(key_for_instance(accounts[1]), data=data)
    with pytest.raises(LockNotAcquired) as refused:
        lock_objects(*accounts, blocking=False).acquire()
    assert not isinstance(refused.value, LockTimeout)
    assert LockData.from_bytes(refused.value.holder.data).username == "bob"
    assert other_holder.owner_name in str(refused.value)
    assert not held(accounts[0])  # none were kept
    assert not held(accounts[2])
    bobs.release()


def test_a_timeout_waits_then_raises_lock_timeout(accounts, other_holder):
    bobs = other_holder.acquire(key_for_instance(accounts[2]))
    with pytest.raises(LockTimeout):
        lock_objects(*accounts, timeout=0.3).acquire()
    assert not held(accounts[0])
    bobs.release()


def test_as_a_decorator_each_call_takes_the_locks_afresh_of_the_rows_selected_then(accounts):
    tokens = []

    @lock_objects(Account.objects.all())
    def settle():
        tokens.append([get_client().get(key_for_instance(a)).fencing_token for a in accounts])
        return held(accounts[-1])

    assert settle()
    accounts.append(Account.objects.create(name="Umbrella"))  # selected by the queryset from now on
    assert settle()
    assert all(first < second for first, second in zip(*tokens, strict=False))
    assert not any(held(account) for account in accounts)


def test_async_with_and_a_decorated_coroutine(accounts):
    @lock_objects(*accounts[:2])
    async def job():
        return held(accounts[0]) and held(accounts[1])

    async def block():
        async with lock_objects(*accounts) as group:
            return group.is_held()

    assert asyncio.run(block()) is True
    assert asyncio.run(job()) is True
    assert not any(held(account) for account in accounts)


def test_inside_a_transaction_released_only_when_it_commits(accounts, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        with lock_objects(*accounts):
            pass
        assert all(held(account) for account in accounts)  # the block ended, the transaction did not
    assert not any(held(account) for account in accounts)


def test_inside_a_transaction_released_when_it_rolls_back(accounts):
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        with lock_objects(*accounts):
            pass
        assert held(accounts[0])
        1 / 0  # noqa: B018
    assert not any(held(account) for account in accounts)


def test_an_exception_in_the_block_is_never_swallowed(accounts):
    with pytest.raises(ZeroDivisionError), lock_objects(*accounts):
        1 / 0  # noqa: B018
    assert not any(held(account) for account in accounts)


def test_nothing_to_lock_is_a_clear_error():
    with pytest.raises(InvalidLockRequest, match="no objects"):
        lock_objects(Account.objects.none()).acquire()


def test_rows_of_two_databases_are_a_clear_error(accounts):
    accounts[1]._state.db = "replica"
    with pytest.raises(InvalidLockRequest, match="several databases"):
        lock_objects(*accounts)


def test_fenced_save_takes_each_rows_token_from_the_group(accounts):
    acme, globex, _ = accounts
    with lock_object(acme):
        pass  # acme's next token follows this one; globex's first is seeded from the clock later
    time.sleep(0.01)
    with lock_objects(acme, globex) as group:
        assert len(set(group.fencing_tokens.values())) == 2
        fenced_refresh(acme, group)
        acme.balance, globex.balance = acme.balance - 10, globex.balance + 10
        fenced_save(acme, group)
        fenced_save(globex, group, update_fields=["balance"])
    acme.refresh_from_db()
    globex.refresh_from_db()
    assert (acme.balance, globex.balance) == (-10, 10)
    assert acme.fencing_token == group.fencing_tokens[key_for_instance(acme)]
    assert globex.fencing_token == group.fencing_tokens[key_for_instance(globex)]


def test_a_group_is_fenced_out_by_a_newer_lock(accounts):
    acme = accounts[0]
    with lock_objects(*accounts) as group:
        pass
    with lock_object(acme) as newer:
        fenced_save(acme, newer)
    acme.balance = 99
    with pytest.raises(StaleFencingToken):  # the group's token, as a holder that has not noticed yet writes it
        fenced_save(acme, group.fencing_tokens[key_for_instance(acme)])
    acme.refresh_from_db()
    assert acme.balance == 0


def test_fenced_save_of_a_row_outside_the_group_is_a_clear_error(accounts):
    acme, globex, initech = accounts
    with lock_objects(acme, globex) as group, pytest.raises(InvalidLockRequest, match=r"is not in this lock group"):
        fenced_save(initech, group)
    initech.refresh_from_db()
    assert initech.fencing_token is None
