"""A django-q2 ``Schedule`` whose function has ``@lock_task``: each due run is a copy taken under the lock, and
one that meets a live holder skips visibly, naming the copy django-q2 made (django_q_schedule.py).

django-q2's scheduler, its ``async_task`` and its worker code run in one process (``sync``), on the ORM broker in
a SQLite file of the test's; the clusters that run copies, SIGKILLed, are in the chaos run (test_task_chaos.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ...chaos.history import load
from ..processes import ROOT, manage_py_environment
from .environment import EVENTS
from .test_task_chaos import with_share_of

pytestmark = [
    pytest.mark.processes,
    pytest.mark.uses_dynalock,
    pytest.mark.slow,
    with_share_of("django_q"),
]


def test_each_due_run_of_a_schedule_is_a_locked_copy_and_one_meeting_a_live_holder_skips(
    dynalock: dict[str, Any], tmp_path: Path
) -> None:
    events_dir = tmp_path / "events"
    events_dir.mkdir()
    env = manage_py_environment(
        dynalock,
        "tests.django.tasks.django_q_settings",
        DYNALOCK_TEST_DATABASE=str(tmp_path / "queue.sqlite3"),
        DYNALOCK_TEST_DJANGO_Q_SYNC="1",
        **{EVENTS: str(events_dir)},
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.django.tasks.django_q_schedule"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    events = load(events_dir)
    ran = [(e.key, e.data["id"]) for e in events if e.kind == "scheduled"]
    assert ran == [("scheduled 9", first)]  # the first due run: locked, and the lock read django-q2's copy id
    assert [e.token for e in events if e.kind == "scheduled"] != [None]
    assert [e.data["id"] for e in events if e.kind == "skip"] == [second]  # the second met the holder: skipped
