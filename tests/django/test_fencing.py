"""Fenced writes: a write under an older lease never overwrites a newer holder's."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from dynalock_django import fenced_refresh, fenced_save, lock_model, lock_object, lock_objects
from dynalock_django.client import get_client
from dynalock_django.exceptions import ConfigurationError, LockLost, StaleFencingToken
from dynalock_django.keys import key_for_instance

from ..dynamodb_support import HEARTBEAT
from .testapp.models import Account, Tag

PATIENT_READS = {"connect_timeout": 1, "read_timeout": 5, "retries": {"total_max_attempts": 1}}

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


def test_a_write_under_an_older_token_raises_and_changes_nothing(other_holder):
    account = Account.objects.create(name="Acme", balance=1)
    with lock_object(account) as old:
        pass
    with lock_object(account) as new:
        account.balance = 2
        fenced_save(account, new, update_fields=["balance"])
    stale = Account.objects.get(pk=account.pk)
    stale.balance = 99
    with pytest.raises(StaleFencingToken) as caught:  # the token of a holder that does not know yet
        fenced_save(stale, old.fencing_token, update_fields=["balance"])
    assert (caught.value.token, caught.value.stored_token) == (old.fencing_token, new.fencing_token)
    row = Account.objects.get(pk=account.pk)
    assert (row.balance, row.fencing_token) == (2, new.fencing_token)


def test_the_same_lease_may_write_again_and_newer_leases_win():
    account = Account.objects.create(name="Acme")
    with lock_object(account) as lease:
        for value in (1, 2):
            account.balance = value
            fenced_save(account, lease)
    assert Account.objects.get(pk=account.pk).fencing_token == lease.fencing_token


def test_fenced_refresh_claims_the_row_before_the_read():
    account = Account.objects.create(name="Acme", balance=5)
    with lock_object(account) as old:
        pass
    with lock_object(account) as new:
        fenced_refresh(account, new)
        assert account.fencing_token == new.fencing_token
    # The older holder cannot write between the newer one's read and write.
    with pytest.raises(StaleFencingToken):
        fenced_save(Account.objects.get(pk=account.pk), old.fencing_token)


def test_a_new_instance_is_inserted_with_the_token():
    with lock_model(Account, 10_001) as lease:
        account = Account(pk=10_001, name="new")
        fenced_save(account, lease)
    assert Account.objects.get(pk=10_001).fencing_token == lease.fencing_token


def test_a_fenced_save_of_a_deleted_row_raises_does_not_exist():
    account = Account.objects.create(name="gone")
    with lock_object(account) as lease:
        Account.objects.filter(pk=account.pk).delete()
        with pytest.raises(Account.DoesNotExist):
            fenced_save(account, lease)


def test_a_model_without_a_fencing_field_is_a_clear_error():
    tag = Tag.objects.create(slug="x")
    with lock_object(tag) as lease, pytest.raises(ConfigurationError, match="FencingTokenField"):
        fenced_save(tag, lease)


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "unfenced-control"])
def test_a_holder_paused_past_its_lease_cannot_overwrite_the_next_holders_write(fenced, dynalock, tmp_path):
    """Real processes: A holds, is SIGSTOPped past its lease, B takes over and writes, A resumes and writes."""
    database = tmp_path / "shared.sqlite3"
    env = {
        **os.environ,
        "DYNALOCK_TEST_DATABASE": str(database),
        # Its short lease (the pause must outlast it), with patient reads: what is tested is the fence, and
        # a loaded DynamoDB Local can take longer than the suite's half second to answer (three such
        # time-outs in a row opened a child's circuit breaker in a CI run).
        "DYNALOCK_TEST_SETTINGS": json.dumps({**dynalock, "BOTO_CONFIG": PATIENT_READS}),
        "PYTHONWARNINGS": "ignore",  # the default retry budget exceeds these short leases
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0", "--settings=tests.settings"], env=env, check=True)
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        db.execute("INSERT INTO testapp_account (id, name, balance) VALUES (1, 'Acme', 0)")

    worker = [sys.executable, "-m", "tests.django.fencing_worker", "1"]
    first = subprocess.Popen(
        [*worker, "111", "--wait-for-go", *([] if fenced else ["--unfenced"])],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first_token = int(first.stdout.readline().split()[1])
        first.send_signal(signal.SIGSTOP)  # a GC pause, a VM migration...
        second = subprocess.run([*worker, "222"], env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 0, second.stderr
        second_token = int(second.stdout.split()[1])
        assert second.stdout.split()[2] == "WROTE"
        assert second_token > first_token
        first.send_signal(signal.SIGCONT)
        time.sleep(HEARTBEAT)
        first_said, _ = first.communicate("go\n", timeout=30)
    finally:
        first.kill()
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        (balance,) = db.execute("SELECT balance FROM testapp_account WHERE id = 1").fetchone()
    if fenced:
        assert first_said.split() == ["STALE", str(second_token)]
        assert balance == 222  # the newer holder's write stands
    else:
        assert first_said.strip() == "WROTE"
        assert balance == 111  # the lost update the fence prevents


def test_an_instance_built_from_its_pk_is_still_fenced():
    """Found by the chaos run: Model(pk=...) is "adding" in Django's eyes, yet its row exists."""
    stored = Account.objects.create(name="Acme", balance=1)
    with lock_object(stored) as old:
        pass
    with lock_object(stored) as new:
        fenced_refresh(Account(pk=stored.pk), new)
    by_pk = Account(pk=stored.pk, name="Acme", balance=99)
    assert by_pk._state.adding
    with pytest.raises(StaleFencingToken):
        fenced_save(by_pk, old.fencing_token)
    assert Account.objects.get(pk=stored.pk).balance == 1


def test_fenced_refresh_of_a_missing_row_raises_does_not_exist():
    with lock_model(Account, 424242) as lease, pytest.raises(Account.DoesNotExist):
        fenced_refresh(Account(pk=424242), lease)


def force_released_and_noticed(memory, key):
    """An operator force-releases ``key`` from another process; the holder's next heartbeat sees it."""
    operator = memory.new_client()
    operator.force_release(operator.get(key), released_by="ops")
    memory.advance(HEARTBEAT * 2)


def test_a_lease_the_holder_knows_is_lost_writes_nothing(dynalock_in_memory):
    account = Account.objects.create(name="Acme", balance=1)
    lease = get_client().acquire(key_for_instance(account))
    fenced_refresh(account, lease)
    force_released_and_noticed(dynalock_in_memory, lease.key)
    assert not lease.is_held()  # the library knows, and no newer lease wrote the row: only we can refuse

    account.balance = 99
    with pytest.raises(LockLost, match="no longer held") as caught:
        fenced_save(account, lease, update_fields=["balance"])
    assert caught.value.current is not None
    assert caught.value.current.is_released  # what replaced our holding: the operator's release
    with pytest.raises(LockLost):
        fenced_refresh(account, lease)
    row = Account.objects.get(pk=account.pk)
    assert (row.balance, row.fencing_token) == (1, lease.fencing_token)


def test_a_group_member_the_holder_knows_is_lost_writes_nothing(dynalock_in_memory):
    acme, globex = Account.objects.create(name="Acme"), Account.objects.create(name="Globex")
    group = lock_objects(acme, globex).acquire()
    force_released_and_noticed(dynalock_in_memory, key_for_instance(acme))
    assert group[key_for_instance(globex)].is_held()

    acme.balance = globex.balance = 99
    with pytest.raises(LockLost):
        fenced_save(acme, group)
    fenced_save(globex, group)  # its own lease is still held
    assert Account.objects.get(pk=acme.pk).balance == 0
    assert Account.objects.get(pk=globex.pk).balance == 99


def test_a_released_lease_writes_nothing():
    account = Account.objects.create(name="Acme", balance=1)
    with lock_object(account) as lease:
        pass
    account.balance = 99
    with pytest.raises(LockLost, match="released"):
        fenced_save(account, lease)
    assert Account.objects.get(pk=account.pk).balance == 1
