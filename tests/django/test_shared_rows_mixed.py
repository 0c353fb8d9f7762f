"""A row's reader and writer (``lock_object(row, shared=True)``, ``lock_object(row)``) in one thread or task:
WouldDeadlock at once, with no request; another thread or task waits for the holder as before.

Leases no heartbeat renews within a test (60 s), so the counts are the calls' own. Django's client keeps
real time: "at once" is asserted as far under the timeout the refused call would have waited out before.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from django.conf import settings
from django.test import override_settings

from dynalock_django import lock_object
from dynalock_django.client import close_client, get_client
from dynalock_django.exceptions import WouldDeadlock

from ..dynamodb_support import PATIENCE, RequestCounter
from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

TIMEOUT = 30.0  # what the refused call waited out before
AT_ONCE = TIMEOUT / 3  # a bound in the safe direction: the refusal takes milliseconds


@pytest.fixture
def account(dynalock):
    with override_settings(DYNALOCK={**settings.DYNALOCK, "LEASE_DURATION": 60.0, "HEARTBEAT_PERIOD": 20.0}):
        close_client()
        yield Account.objects.create(name="Acme")
    close_client()


def test_the_rows_reader_asking_for_its_writer_is_would_deadlock_at_once(account):
    with lock_object(account, shared=True) as reader:
        requests_made, started = RequestCounter(get_client().dynamodb), time.monotonic()
        with pytest.raises(WouldDeadlock, match="release the read before asking to write") as refused:
            lock_object(account, timeout=TIMEOUT).acquire()
        assert repr(reader.key.split("#")[0]) in str(refused.value)
        with pytest.raises(WouldDeadlock):
            lock_object(account, blocking=False).acquire()  # refused as a plain lock the context holds is
        with pytest.raises(WouldDeadlock):
            lock_object(account, timeout=TIMEOUT, reentrant=True).acquire()  # a reader is not shared with a writer
        assert requests_made.total == 0
        assert time.monotonic() - started < AT_ONCE
    with lock_object(account, blocking=False) as writer:  # the read released: the writer is asked for as usual
        assert writer.is_held()


def test_the_rows_writer_asking_for_its_reader_is_would_deadlock_at_once(account):
    with lock_object(account) as writer:
        requests_made, started = RequestCounter(get_client().dynamodb), time.monotonic()
        with pytest.raises(WouldDeadlock, match="release the write before asking to read") as refused:
            lock_object(account, shared=True, timeout=TIMEOUT).acquire()
        assert refused.value.holder.fencing_token == writer.fencing_token
        with pytest.raises(WouldDeadlock):
            lock_object(account, shared=True, blocking=False).acquire()
        assert requests_made.total == 0
        assert time.monotonic() - started < AT_ONCE


def test_another_thread_waits_for_the_reader_and_writes_after_it(account):
    written: list[int] = []

    def write() -> None:
        with lock_object(account, timeout=PATIENCE) as lease:
            written.append(lease.fencing_token)

    with lock_object(account, shared=True):
        writer = threading.Thread(target=write)
        writer.start()
        writer.join(0.3)
        assert writer.is_alive()  # waiting for this thread's reader, not refused
    writer.join(PATIENCE)
    assert not writer.is_alive()
    assert len(written) == 1


def test_async_a_tasks_reader_and_writer_are_would_deadlock_and_another_task_waits(account):
    async def scenario() -> None:
        async with lock_object(account, shared=True):
            requests_made, started = RequestCounter(get_client().dynamodb), time.monotonic()
            with pytest.raises(WouldDeadlock, match="release the read"):
                await lock_object(account, timeout=TIMEOUT).aacquire()
            assert requests_made.total == 0
            assert time.monotonic() - started < AT_ONCE
            writing = asyncio.create_task(lock_object(account, timeout=PATIENCE).aacquire())  # another task: waits
            await asyncio.sleep(0.3)
            assert not writing.done()
        lease = await asyncio.wait_for(writing, PATIENCE)
        assert lease.is_held()
        await lease.arelease()
        async with lock_object(account) as writer:
            requests_made.reset()
            with pytest.raises(WouldDeadlock, match="release the write") as refused:
                await lock_object(account, shared=True, timeout=TIMEOUT).aacquire()
            assert refused.value.holder.fencing_token == writer.fencing_token
            assert requests_made.total == 0

    asyncio.run(scenario())
