"""manage.py dynalock, through call_command, against the real local endpoint."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from io import StringIO

import pytest
from django.core.management import CommandError, ManagementUtility, call_command
from django.test import override_settings

from dynalock_django import lock_key, lock_object
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.leader import EXIT_LEASE_LOST
from dynalock_django.payload import LockData
from dynalock_django.signals import lease_acquired, lease_release_failed
from dynalock_django.testing import locks_in_memory

from ...dynamodb_support import FaultInjector, still_building, unique
from ..testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


def test_createtable_is_idempotent_and_shows_progress(dynalock):
    name = unique("created-by-command")
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": name}):
        first = dynalock_output("createtable")
        assert f"Creating table '{name}'" in first
        assert "is ready (TTL ENABLED, live-locks index ACTIVE)" in first
        assert "already exists" in dynalock_output("createtable")


def test_createtable_without_the_ttl_api_creates_the_table_and_warns_every_time(dynalock):
    """As on dynalite: UpdateTimeToLive answers UnknownOperationException. The command succeeds all the same."""
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": unique("created-without-ttl")}):
        FaultInjector(get_client().dynamodb).fail("UpdateTimeToLive", code="UnknownOperationException", times=2)
        for _ in range(2):
            out, err = StringIO(), StringIO()
            call_command("dynalock", "createtable", stdout=out, stderr=err)
            assert "is ready (TTL UNAVAILABLE, live-locks index ACTIVE)" in out.getvalue()
            assert "expired lock items will not be cleaned up" in err.getvalue()
        assert "already exists" in out.getvalue()
        with lock_key("works-all-the-same"):
            pass


@pytest.mark.parametrize("command", ["createtable", "createindex"])
def test_a_wait_past_its_timeout_ends_with_an_error_that_says_dynamodb_goes_on(dynalock, command):
    with still_building(get_client().dynamodb), pytest.raises(CommandError) as raised:
        dynalock_output(command, "--timeout", "0")
    assert "Not ready after 0s: table " in str(raised.value)
    assert "Run the command again to wait longer; python manage.py dynalock describe shows its status." in str(
        raised.value
    )
    for bad in ("-1", "nan", "inf"):
        with pytest.raises(CommandError, match=f"--timeout: '{bad}': give a finite number of seconds, 0 or more"):
            dynalock_output(command, "--timeout", bad)
    assert "is ready" in dynalock_output(command, "--timeout", "5")


def test_createtable_dry_run_prints_the_request_and_creates_nothing(dynalock):
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "never-created"}):
        request = json.loads(dynalock_output("createtable", "--dry-run", "--provisioned", "5", "7"))
        assert request["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 7}
        with pytest.raises(CommandError, match="Run: python manage.py dynalock createtable"):
            dynalock_output("describe")


def test_describe_shows_the_table_and_no_credentials(dynalock):
    out = dynalock_output("describe")
    assert dynalock["TABLE_NAME"] in out
    assert "key (S)" in out
    assert "ENABLED on ttl" in out
    assert "testing" not in out  # the fake AWS secret


def test_list_shows_held_locks_with_their_objects_and_filters_by_model():
    account = Account.objects.create(name="Acme")
    with lock_object(account, purpose="edit"), lock_key("nightly-billing"):
        table = dynalock_output("list")
        assert "Acme" in table
        assert "nightly-billing" in table
        assert "2 lock(s)" in table
        only_accounts = dynalock_output("list", "--model", "testapp.account", "--json", "--page-size", "1")
        [line] = only_accounts.splitlines()
        row = json.loads(line)
        assert row["key"] == key_for_instance(account)
        assert row["purpose"] == "edit"
        assert row["state"] == "held"
    assert "0 lock(s)" in dynalock_output("list")
    assert "2 lock(s)" in dynalock_output("list", "--all")


def test_list_of_an_unknown_model_is_an_error_naming_it():
    with pytest.raises(CommandError, match="Unknown model 'nope.nothing'"):
        dynalock_output("list", "--model", "nope.nothing")


def test_show_finds_the_same_lock_by_key_and_by_model_and_pk():
    account = Account.objects.create(name="Acme")
    with lock_object(account) as lease:
        by_model = dynalock_output("show", "testapp.account", str(account.pk))
        by_key = dynalock_output("show", lease.key)
    assert by_model == by_key
    assert f"token  {lease.fencing_token}" in by_key
    with pytest.raises(CommandError, match="No lock item"):
        dynalock_output("show", "never-locked")


def test_release_needs_force_asks_and_records_who_did_it(monkeypatch):
    lease = lock_key("job").acquire()
    with pytest.raises(CommandError, match="add --force"):
        dynalock_output("release", "job")
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(CommandError, match="Not released"):
        dynalock_output("release", "job", "--force")
    assert lease.is_held()
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert "Released 'job'" in dynalock_output("release", "job", "--force", "--by", "carol")
    stored = get_client().get("job")
    assert stored.is_released
    assert stored.released_by == "carol"
    assert lease.wait_until_lost(2)


def test_release_takes_a_rows_model_and_pk_as_show_does():
    account = Account.objects.create(name="Acme")
    lease = lock_object(account).acquire()
    released = dynalock_output("release", "testapp.account", str(account.pk), "--force", "--yes")
    assert f"Released {lease.key!r}" in released
    assert lease.wait_until_lost(2)
    with pytest.raises(CommandError, match="unrecognized arguments: 3"):
        dynalock_output("release", "testapp.account", "1", "3", "--force")


@pytest.mark.parametrize("option", [["--traceback"], ["--verbosity", "2"], ["--no-color"], ["--skip-checks"]])
def test_djangos_options_work_after_the_subcommand(option):
    with lock_key("job"):
        assert "job" in dynalock_output("list", *option)
        assert "job" in dynalock_output("show", "job", *option)


def test_release_of_a_free_lock_says_so():
    with pytest.raises(CommandError, match="not held"):
        dynalock_output("release", "free", "--force", "--yes")


def test_dynalock_run_exits_with_the_commands_exit_code():
    with pytest.raises(SystemExit) as exited:
        dynalock_output("run", "job", "--", sys.executable, "-c", "raise SystemExit(4)")
    assert exited.value.code == 4


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--grace-period", "nan", "--", "true"], "--grace-period: 'nan': give a finite number of seconds"),
        (["--grace-period", "-1", "--", "true"], "--grace-period: '-1': give a finite number of seconds"),
        (["--grace-period", "inf", "--", "true"], "--grace-period: 'inf': give a finite number of seconds"),
        (["--grace-period", "soon", "--", "true"], "'soon' is not a number of seconds"),
        (["--min-hold", "0", "--", "true"], "--min-hold: '0': give a number of seconds more than 0"),
        (["--", "no-such-program-dynalock"], "Cannot run 'no-such-program-dynalock': not found on PATH."),
        (["--", "/no/such/program"], "Cannot run '/no/such/program': no such file."),
    ],
)
def test_dynalock_run_refuses_bad_arguments_with_a_clear_error_and_exit_code_2(capsys, arguments, message):
    # Through Django's command line, as manage.py runs it (run_from_argv: errors to stderr, an exit status);
    # the system checks left out, as they would refuse the in-process store's endpoint.
    argv = ["manage.py", "dynalock", "--skip-checks", "run", "nightly", *arguments]
    with pytest.raises(SystemExit) as exited:
        ManagementUtility(argv).execute()
    errors = capsys.readouterr().err
    assert exited.value.code == 2
    assert message in errors
    assert "Traceback" not in errors


def test_dynalock_run_exits_with_the_commands_status_when_the_release_after_it_gets_no_answer(caplog):
    """Issue 31: a scheduler that retries failures must not run a one-host job again that exited 0."""
    failed = []
    with locks_in_memory() as memory:

        def outage_once_the_job_runs(**_: object) -> None:
            memory.faults.hang()  # from now on DynamoDB answers nothing: the release after the command too

        def release_failed(sender: str, **_: object) -> None:
            failed.append(sender)

        lease_acquired.connect(outage_once_the_job_runs)
        lease_release_failed.connect(release_failed)
        try:
            with pytest.raises(SystemExit) as exited, caplog.at_level(logging.WARNING, "dynalock_django.release"):
                dynalock_output("run", "nightly", "--", sys.executable, "-c", "raise SystemExit(0)")
        finally:
            lease_acquired.disconnect(outage_once_the_job_runs)
            lease_release_failed.disconnect(release_failed)
            memory.faults.heal()
    assert exited.value.code == 0
    assert failed == ["nightly"]
    assert len(caplog.records) == 1
    assert "did not confirm the release" in caplog.messages[0]


def test_dynalock_run_stops_the_command_when_the_lease_is_lost(other_holder):
    script = "import time\nfor _ in range(600): time.sleep(0.1)"

    def take_it_away():
        while (held := other_holder.get("job")) is None or held.is_released:
            time.sleep(0.05)
        other_holder.force_release(held, released_by="ops")

    threading.Thread(target=take_it_away, daemon=True).start()
    with pytest.raises(SystemExit) as exited:
        dynalock_output("run", "job", "--grace-period", "1", "--", sys.executable, "-c", script)
    assert exited.value.code == EXIT_LEASE_LOST


def test_a_missing_table_names_the_fix(dynalock):
    missing = override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "missing-table"})
    with missing, pytest.raises(CommandError, match="createtable"):
        dynalock_output("list")


def test_list_shows_the_holder_and_purpose_from_the_lock_data():
    lease = lock_key("report", purpose="monthly").acquire()
    row = json.loads(dynalock_output("list", "--json"))
    assert row["holder"] == LockData.from_bytes(get_client().get("report").data).holder
    assert row["purpose"] == "monthly"
    lease.release()


def dynalock_output(*args):
    out = StringIO()
    call_command("dynalock", *args, stdout=out, stderr=StringIO())
    return out.getvalue()
