"""A plain management command holding a lock, told to stop with SIGTERM: what happens, and the fix the docs give."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from dynalock_django.client import get_client
from dynalock_django.locks import lock_key

from ..dynamodb_support import PATIENCE
from .processes import ROOT, manage_py_environment, wait_for

pytestmark = [pytest.mark.processes, pytest.mark.uses_dynalock]


def hold_lock(dynalock, tmp_path, *options):
    ready = tmp_path / "ready"
    env = manage_py_environment(dynalock, "tests.settings")
    command = [sys.executable, "manage.py", "hold_lock", "job", "--ready-file", str(ready), *options]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    try:
        # A new process's Django start and first lock: past 5 s on a loaded machine under coverage (CI's).
        wait_for(ready.exists, 4 * PATIENCE)
    except BaseException:
        process.kill()  # not left running into the next test
        process.wait()
        raise
    return process


def test_by_default_sigterm_ends_the_command_without_releasing_the_lease_runs_out(dynalock, tmp_path):
    process = hold_lock(dynalock, tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=PATIENCE) == -signal.SIGTERM
    held = get_client().get(lock_key("job").key)
    assert not held.is_released  # nobody released it: a waiter must wait out the lease


@pytest.mark.parametrize("holder", [(), ("--leader",)], ids=["lock_key", "Leadership"])
def test_with_sigterm_turned_into_system_exit_the_command_releases_as_it_exits(dynalock, tmp_path, holder):
    process = hold_lock(dynalock, tmp_path, "--release-on-sigterm", *holder)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=PATIENCE) == 128 + signal.SIGTERM
    assert get_client().get(lock_key("job").key).is_released
