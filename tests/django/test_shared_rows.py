"""lock_object(row, shared=True): readers of a row hold it together; plain lock_object, its writer, excludes them."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.conf import settings
from django.test import override_settings

from dynalock_django import lock_model, lock_object
from dynalock_django.client import close_client, get_client
from dynalock_django.dynamodb import MAX_COUNTED_NAME_BYTES
from dynalock_django.dynamodb.counted.permit_set import PermitSet
from dynalock_django.exceptions import InvalidLockRequest, LockNotAcquired, LockTimeout, WouldDeadlock
from dynalock_django.keys import key_for_instance
from dynalock_django.locks import RowLock, SharedRowLock

from ..dynamodb_support import PATIENCE, RequestCounter, in_another_thread
from .testapp.models import Account, AccountProxy, PremiumAccount, Ticket, Topic

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def account():
    return Account.objects.create(name="Acme")


def test_readers_hold_the_row_together(account, dynalock):
    # Leases no loaded machine's pause runs out (a 1 s one did, on CI): what is asserted is sharing, not renewal.
    patient = {**dynalock, "LEASE_DURATION": 60.0, "HEARTBEAT_PERIOD": 20.0}
    with (
        override_settings(DYNALOCK=patient),
        lock_object(account, shared=True) as first,
        lock_object(account, shared=True) as second,
    ):
        assert first.is_held()
        assert second.is_held()
        assert first.fencing_token != second.fencing_token or first.key != second.key


def test_the_writer_cannot_take_a_row_readers_hold(account):
    # Another thread: the reader's own thread asking to write is WouldDeadlock (test_lock_mix.py).
    with lock_object(account, shared=True):
        with pytest.raises(LockNotAcquired) as refused:
            in_another_thread(lock_object(account, blocking=False).acquire)
        assert not isinstance(refused.value, WouldDeadlock)
        with pytest.raises(LockTimeout) as timed_out:
            in_another_thread(lock_object(account, timeout=0.3).acquire)
        assert not isinstance(timed_out.value, WouldDeadlock)
    with lock_object(account, blocking=False) as lease:  # the readers left: the writer takes it
        assert lease.is_held()


def test_a_row_locked_before_still_waits_for_a_reader_that_came_since(account, requests_made):
    with lock_object(account):  # the row's item exists now, with no reader's mark: its next writer reads nothing
        pass
    with lock_object(account, shared=True):
        requests_made.reset()
        with pytest.raises(LockTimeout, match="1 reader"):  # the reader's mark made the writer look
            in_another_thread(lock_object(account, timeout=0.3).acquire)
        assert requests_made.calls["BatchGetItem"] >= 1


def test_a_reader_cannot_take_a_row_the_writer_holds(account):
    with lock_object(account), pytest.raises(LockNotAcquired) as refused:
        in_another_thread(lock_object(account, shared=True, blocking=False).acquire)
    assert not isinstance(refused.value, WouldDeadlock)
    with lock_object(account, shared=True, blocking=False):
        pass


def test_the_writer_waits_for_the_readers_to_leave(account):
    reader = lock_object(account, shared=True)
    in_another_thread(reader.acquire)  # the reader is that thread's: this one waits for it, not for itself
    leaving = threading.Timer(0.2, reader.release)
    leaving.start()
    with lock_object(account, timeout=PATIENCE) as lease:
        assert lease.is_held()
        assert reader.held is None  # the reader had left before the writer got in
    leaving.join()


def test_a_waiting_writer_keeps_new_readers_out(account):
    reader = lock_object(account, shared=True)
    reader.acquire()
    writer_in = threading.Event()

    def write() -> None:
        with lock_object(account, timeout=PATIENCE):
            writer_in.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        refused = False
        for _ in range(50):  # until the writer has taken its place in front of the readers
            try:
                lock_object(account, shared=True, blocking=False).acquire().release()
            except LockNotAcquired:
                refused = True
                break
            threading.Event().wait(0.02)
        assert refused
        assert not writer_in.is_set()
    finally:
        reader.release()
        writer.join(PATIENCE)
    assert writer_in.is_set()


def test_async_readers_and_writer(account):
    async def another_task(lock: SharedRowLock | RowLock) -> None:
        with pytest.raises(LockNotAcquired) as refused:  # another task: refused as any holder's lock is
            await asyncio.create_task(lock.aacquire())
        assert not isinstance(refused.value, WouldDeadlock)

    async def scenario() -> None:
        async with lock_object(account, shared=True), lock_object(account, shared=True):
            await another_task(lock_object(account, blocking=False))
        async with lock_object(account, blocking=False):
            await another_task(lock_object(account, shared=True, blocking=False))

    asyncio.run(scenario())


def test_the_writers_item_is_the_rows_lock_as_before(account):
    with lock_object(account) as lease:
        assert lease.key == key_for_instance(account)
        assert get_client().get(key_for_instance(account)).fencing_token == lease.fencing_token


def test_shared_must_be_true_or_false(account):
    assert isinstance(lock_object(account, shared=True), SharedRowLock)
    with pytest.raises(InvalidLockRequest, match="shared='yes'.*True .*False"):
        lock_object(account, shared="yes")


def test_a_row_whose_key_leaves_no_room_for_readers_is_locked_as_before_and_refuses_readers():
    topic = Topic.objects.create(name="😀" * 255)  # its key is shortened to DynamoDB's 2048 bytes
    key = key_for_instance(topic)
    assert len(key.encode()) > MAX_COUNTED_NAME_BYTES
    with lock_object(topic) as lease:  # the writer: the row's lock as it always was
        assert lease.key == key
    with pytest.raises(InvalidLockRequest, match="too long for readers.*lock_object\\(row\\) without shared"):
        lock_object(topic, shared=True).acquire()


def test_a_row_of_a_model_not_read_shared_costs_two_requests_first_lock_included(requests_made, monkeypatch):
    """No reader can be in (its model is not in SHARED_LOCK_MODELS): no BatchGetItem of a reader set, no permit code."""

    def no_permits(*args, **kwargs):
        raise AssertionError("a plain row's lock built a PermitSet")

    monkeypatch.setattr(PermitSet, "__init__", no_permits)
    ticket = Ticket.objects.create(title="Printer on fire")
    for _ in range(2):  # the row's first lock (no item yet), then a released item's
        requests_made.reset()
        with lock_object(ticket) as lease:
            assert lease.is_held()
        assert requests_made.calls == {"UpdateItem": 2}
    requests_made.reset()
    with lock_model(Ticket, ticket.pk):
        pass
    assert requests_made.calls == {"UpdateItem": 2}


def test_deleted_on_release_a_plain_rows_lock_is_still_two_requests(requests_made):
    ticket = Ticket.objects.create(title="Printer on fire")
    with override_settings(DYNALOCK={**settings.DYNALOCK, "DELETE_ON_RELEASE": True}):
        close_client()
        for _ in range(2):
            requests_made = RequestCounter(get_client().dynamodb)
            with lock_object(ticket):
                pass
            assert requests_made.calls == {"UpdateItem": 1, "DeleteItem": 1}
    close_client()


def test_async_a_plain_rows_lock_is_two_requests():
    ticket = Ticket.objects.create(title="Printer on fire")

    async def scenario() -> None:
        async with lock_object(ticket):
            pass

    # A lease no heartbeat renews within the test: a loaded CI leg's first asyncio.run outlasted a 0.25 s heartbeat
    # period, and the renewal was counted.
    with override_settings(DYNALOCK={**settings.DYNALOCK, "LEASE_DURATION": 60.0, "HEARTBEAT_PERIOD": 20.0}):
        close_client()
        requests_made = RequestCounter(get_client().dynamodb)
        asyncio.run(scenario())
        assert requests_made.calls == {"UpdateItem": 2}
    close_client()


def test_a_declared_models_first_lock_still_looks_for_readers(account, requests_made):
    """Account is in SHARED_LOCK_MODELS (tests/django/conftest.py): its row's first writer cannot vouch for the past."""
    with lock_object(account):
        pass
    assert requests_made.calls == {"UpdateItem": 2, "BatchGetItem": 1}


def test_a_reader_of_a_model_not_declared_is_refused_naming_the_setting():
    ticket = Ticket.objects.create(title="Printer on fire")
    with pytest.raises(
        InvalidLockRequest, match=r"testapp\.Ticket.*'testapp\.Ticket' to DYNALOCK\[\"SHARED_LOCK_MODELS"
    ):
        lock_object(ticket, shared=True)


def test_a_proxy_or_a_child_shares_its_roots_declaration(account):
    premium = PremiumAccount.objects.create(name="Gold")
    with lock_object(premium, shared=True), pytest.raises(LockNotAcquired):  # the same row's reader and writer
        in_another_thread(lock_object(Account.objects.get(pk=premium.pk), blocking=False).acquire)
    with lock_object(AccountProxy.objects.get(pk=account.pk), shared=True):
        pass
