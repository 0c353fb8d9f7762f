"""dramatiq's ``on_conflict="retry"``: no message dropped, however long the holder runs (dramatiq#257).

Real dramatiq workers on the test's redis-server run ``dramatiq_requeued`` (``max_retries=0``: a
conflict counted as dramatiq retry would fail the message at once). One copy holds the key for
several leases; the others, enqueued behind it, meet it and are put back in the queue with a delay of
its remaining lease, again and again, then meet each other. Every copy must run exactly once, none
with a counted retry, none failed, after at least ``CONFLICTS`` conflicts.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ...chaos.history import Recorder, load
from ...dynamodb_support import PATIENCE
from ..processes import manage_py_environment
from . import chaos
from .environment import EVENTS
from .test_task_chaos import with_share_of
from .workers import redis_server

pytestmark = [
    pytest.mark.chaos,
    pytest.mark.uses_dynalock,
    pytest.mark.slow,
    with_share_of("dramatiq"),
]

CONFLICTS = 200
COPIES = 45  # behind the holder; each meets it, or a run of another copy, a few times
# The suite's short lease (no worker is killed here, so no chaos margin is needed): a conflict puts a copy back
# for the holder's remaining lease, so the conflicts come about twice as fast as on the chaos run's 2 s lease.
LEASE, HEARTBEAT = 1.0, 0.25
HOLD = 4 * LEASE  # seconds the first copy runs: several leases, renewed all along
WORKERS, THREADS = 3, 6
SETTLE = 120.0


def test_no_message_is_dropped_however_many_conflicts(dynalock: dict[str, Any], tmp_path: Path) -> None:
    from .chaos_dramatiq_django_q import DramatiqFramework

    settings = {**dynalock, "LEASE_DURATION": LEASE, "HEARTBEAT_PERIOD": HEARTBEAT}
    settings["BOTO_CONFIG"] = chaos.BOTO_CONFIG
    events_dir = tmp_path / "events"
    events_dir.mkdir()
    driver = Recorder(events_dir, "driver")
    env = manage_py_environment(settings, "tests.settings", **{EVENTS: str(events_dir)})
    with contextlib.ExitStack() as stack:
        queue = DramatiqFramework(env, stack.enter_context(redis_server()), tmp_path, driver, threads=THREADS)
        stack.callback(queue.close)
        starter = queue.starter()  # the workers forked from one interpreter's imports: they begin at once
        stack.callback(starter.close)
        workers = [queue.start_worker(f"requeue-{index}", starter) for index in range(WORKERS)]
        for worker in workers:
            stack.callback(worker.kill)
        queue.enqueue("hold", HOLD, flaky=False, probe=False, actor="dramatiq_requeued")
        _wait_for(lambda events: any(e.kind == "start" for e in events), events_dir)
        for _ in range(COPIES):
            queue.enqueue("hold", 0.05, flaky=False, probe=False, actor="dramatiq_requeued")
        events = _wait_for(lambda events: len(_ran(events)) >= COPIES + 1, events_dir)
        time.sleep(1.0)  # a copy run twice would show now
        events = load(events_dir)
    driver.close()

    enqueued = [e.data["id"] for e in events if e.kind == "enqueued"]
    ran = _ran(events)
    begun = Counter(e.data["id"] for e in events if e.kind == "begin")
    conflicts = sum(begun.values()) - len(begun)
    print(f"\n{len(enqueued)} copies, {conflicts} conflicts put back, {len(ran)} runs")
    assert sorted(ran) == sorted(enqueued)  # every copy ran, and once: none dropped, none twice
    assert [e for e in events if e.kind == "failed"] == []
    assert {e.data["attempt"] for e in events if e.kind in ("begin", "start")} == {0}  # no retry counted
    assert conflicts >= CONFLICTS
    assert [e for e in events if e.kind == "skip"] == []


def _ran(events: list[Any]) -> list[str]:
    return [e.data["id"] for e in events if e.kind == "end" and e.data["outcome"] == "ran"]


def _wait_for(done: Any, events_dir: Path) -> list[Any]:
    deadline = time.monotonic() + SETTLE + PATIENCE
    while True:
        events = load(events_dir)
        if done(events):
            return events
        assert time.monotonic() < deadline, f"not done after {SETTLE:g} s: {Counter(e.kind for e in events)}"
        time.sleep(0.2)
