"""A command run by ``dynalock run`` fences its writes with the token its runner puts in the environment."""

from __future__ import annotations

import sys

import pytest

from dynalock_django.client import get_client
from dynalock_django.exceptions import ConfigurationError, StaleFencingToken
from dynalock_django.fencing import fenced_refresh, fenced_save
from dynalock_django.leader import run_while_leader
from dynalock_django.supervised import FENCING_TOKEN_ENV, fencing_token_from_environment

from .testapp.models import Account

pytestmark = pytest.mark.django_db


def test_the_token_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv(FENCING_TOKEN_ENV, "1700000000123")
    assert fencing_token_from_environment() == 1_700_000_000_123


def test_outside_dynalock_run_the_error_says_to_use_it(monkeypatch):
    monkeypatch.delenv(FENCING_TOKEN_ENV, raising=False)
    with pytest.raises(ConfigurationError, match="dynalock run NAME --"):
        fencing_token_from_environment()


def test_a_garbage_token_is_refused_and_shown_escaped(monkeypatch):
    monkeypatch.setenv(FENCING_TOKEN_ENV, "\x1b[31mred")
    with pytest.raises(ConfigurationError, match="not a fencing token") as refused:
        fencing_token_from_environment()
    assert "\x1b" not in str(refused.value)


def test_writes_are_fenced_with_a_bare_token_as_with_a_lease():
    account = Account.objects.create(name="Acme", balance=1)
    fenced_refresh(account, 20)
    account.balance = 2
    fenced_save(account, 20, update_fields=["balance"])
    with pytest.raises(StaleFencingToken):
        fenced_save(Account.objects.get(pk=account.pk), 19)
    assert Account.objects.get(pk=account.pk).balance == 2
    with pytest.raises(TypeError, match="a Lease, a LeaseGroup or a fencing token"):
        fenced_save(account, True)


@pytest.mark.uses_dynalock
def test_the_command_is_told_the_token_of_the_lease_it_runs_under(tmp_path):
    told = tmp_path / "token"
    script = f"import os, pathlib; pathlib.Path({str(told)!r}).write_text(os.environ[{FENCING_TOKEN_ENV!r}])"
    assert run_while_leader("job", [sys.executable, "-c", script]) == 0
    assert int(told.read_text()) == get_client().get("job").fencing_token
