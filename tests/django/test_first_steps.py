"""A new project's first steps: each mistake gets a message naming its fix, not a traceback or a wrong cause."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings

from dynalock_django import lock_key
from dynalock_django.checks import check_table

pytestmark = [pytest.mark.stores, pytest.mark.django_db, pytest.mark.uses_dynalock]


def dynalock_output(*args: str) -> str:
    out = StringIO()
    call_command("dynalock", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def bare_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No region and no credentials from the environment or ~/.aws, and no instance metadata service to ask."""
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # nothing may leave 127.0.0.1


@pytest.fixture
def no_region(dynalock: dict[str, Any], bare_environment: None, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    with override_settings(DYNALOCK={**dynalock, "REGION_NAME": None}):
        yield


@pytest.mark.parametrize("command", ["describe", "createtable"])
def test_a_missing_region_names_the_setting_and_the_variable_boto3_reads(no_region, command):
    with pytest.raises(CommandError) as refused:
        dynalock_output(command)
    message = str(refused.value)
    assert message.startswith("No AWS region is set.")
    assert "REGION_NAME" in message
    assert "AWS_DEFAULT_REGION" in message
    assert "A local endpoint accepts any region" in message


def test_a_missing_region_is_a_deploy_check_error_not_a_crash(no_region):
    [error] = check_table()
    assert error.id == "dynalock.E023"
    assert "AWS_DEFAULT_REGION" in error.msg


def test_aws_region_alone_is_not_read_by_boto3_as_the_readme_says(no_region, dynalock, monkeypatch):
    region = dynalock["REGION_NAME"]  # the local endpoint keeps the test's table in that region
    monkeypatch.setenv("AWS_REGION", region)
    with pytest.raises(CommandError, match="No AWS region is set"):
        dynalock_output("describe")
    monkeypatch.setenv("AWS_DEFAULT_REGION", region)
    with override_settings(DYNALOCK={**settings.DYNALOCK}):  # a new client, built with the new environment
        assert settings.DYNALOCK["TABLE_NAME"] in dynalock_output("describe")


def test_no_credentials_at_all_says_none_were_found_not_that_they_were_rejected(
    dynalock, bare_environment, monkeypatch
):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with override_settings(DYNALOCK={**dynalock}), pytest.raises(CommandError) as refused:
        dynalock_output("describe")
    message = str(refused.value)
    assert "No AWS credentials were found" in message
    assert "rejected" not in message
    assert "AWS_ACCESS_KEY_ID" in message


def test_the_app_missing_from_installed_apps_says_which_setting_to_change():
    script = (
        "import django; from django.conf import settings;"
        "settings.configure(INSTALLED_APPS=['django.contrib.admin', 'django.contrib.auth',"
        " 'django.contrib.contenttypes', 'django.contrib.sessions', 'django.contrib.messages']);"
        "django.setup(); import dynalock_django.admin"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode != 0
    last_line = ran.stderr.strip().splitlines()[-1]
    assert last_line.startswith("django.core.exceptions.ImproperlyConfigured: dynalock_django is not in INSTALLED_APPS")
    assert 'add "dynalock_django" there' in last_line


def test_release_without_a_terminal_says_to_use_yes(monkeypatch):
    lease = lock_key("job").acquire()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # cron, a pipe, </dev/null: input() meets the end
    with pytest.raises(CommandError, match="add --yes to release without asking"):
        dynalock_output("release", "job", "--force")
    assert lease.is_held()
    lease.release()


def test_show_prints_values_as_a_person_reads_them():
    with lock_key("job"):
        shown = dynalock_output("show", lock_key("job").key)
    fields = dict(line.strip().split("  ", 1) for line in shown.splitlines())
    assert fields["released_by"].strip() == "-"
    assert fields["problems"].strip() == "none"
    assert fields["object"].strip() == "-"
    assert "None" not in shown
    assert "[]" not in shown


def test_the_demo_says_when_its_port_is_taken_before_starting_anything(monkeypatch):
    from testproject.desk.management.commands import demo

    def must_not_start(*args: Any) -> None:
        raise AssertionError("the local endpoint was started")

    monkeypatch.setattr(demo, "LocalDynamoDB", must_not_start)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"Port {port} is taken by another program.*make demo PORT="):
            call_command("demo", "--port", str(port), stdout=StringIO())
