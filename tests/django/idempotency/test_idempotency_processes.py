"""Idempotency keys across real processes sharing the lock table on the local endpoint (the processes tier).

Four Django processes send every key's request three times each, in orders of their own: each key's view
runs exactly once (counted in a file every run appends to), and every other answer is a 409 or a
byte-identical replay. A first run whose process is SIGKILLed frees its key within one lease and one
refresh of the duplicate's first look, and that duplicate runs once.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from dynalock_django import IdempotencyKeyInUse, idempotency

from ...dynamodb_support import PATIENCE, wait_for
from ...worker_processes import worker_context
from . import idempotency_workers

pytestmark = [pytest.mark.processes, pytest.mark.uses_dynalock, pytest.mark.django_db]

PROCESSES = 4
KEYS = 40
# The four processes' leases: long enough that a loaded machine (seconds-long stalls, read time-outs)
# never lets one run out under a live first run, which would rightly let a duplicate run the view again.
LONG_LEASES = {
    "LEASE_DURATION": 20.0,
    "HEARTBEAT_PERIOD": 5.0,
    "BOTO_CONFIG": {"connect_timeout": 2, "read_timeout": 5, "retries": {"total_max_attempts": 2}},
}
# How long a freed key may take to be seen free: a loaded machine's patience (the unsafe direction).
FREED_WITHIN = 30.0


def test_four_processes_sending_duplicates_run_each_key_once(dynalock: dict[str, Any], tmp_path: Path) -> None:
    keys = [f"key-{index}" for index in range(KEYS)]
    context = worker_context()
    workers = [
        context.Process(
            target=idempotency_workers.send_duplicates, args=({**dynalock, **LONG_LEASES}, keys, seed, str(tmp_path))
        )
        for seed in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0

    executions = collections.Counter((tmp_path / "executions").read_text().split())
    assert executions == dict.fromkeys(keys, 1)
    answers = [
        answer for seed in range(PROCESSES) for answer in json.loads((tmp_path / f"answers-{seed}.json").read_text())
    ]
    runs = {key: body for key, status, body, replayed in answers if status == 201 and not replayed}
    assert set(runs) == set(keys)
    kinds = collections.Counter("replay" if replayed else status for key, status, body, replayed in answers)
    for key, status, body, replayed in answers:
        assert status == 409 or (status, body) == (201, runs[key])
        assert not replayed or status == 201
    assert kinds[201] == KEYS  # one run per key, every other answer a replay or a 409
    assert len(answers) == KEYS * 3 * PROCESSES


def test_a_killed_first_run_frees_its_key_within_a_lease_and_a_refresh(
    dynalock: dict[str, Any], tmp_path: Path
) -> None:
    first = worker_context().Process(target=idempotency_workers.hold_forever, args=(dynalock, "pay", str(tmp_path)))
    first.start()
    wait_for(lambda: (tmp_path / "started").exists(), 30)
    os.kill(first.pid, signal.SIGKILL)  # type: ignore[arg-type]
    first.join(PATIENCE)
    with pytest.raises(IdempotencyKeyInUse) as in_use, idempotency("pay", fingerprint="f"):
        pass  # the duplicate's first look: the key is still held, by a holder nobody renews any more
    looked = time.monotonic()
    assert in_use.value.retry_after <= dynalock["LEASE_DURATION"] + 1
    runs = 0
    while runs == 0:
        try:
            with idempotency("pay", fingerprint="f") as attempt:
                runs += 1
                attempt.complete("paid")
        except IdempotencyKeyInUse:
            assert time.monotonic() - looked < FREED_WITHIN
            time.sleep(dynalock["REFRESH_PERIOD"])
    freed_after = time.monotonic() - looked
    assert freed_after >= dynalock["LEASE_DURATION"]  # never before a lease: the holder might have been alive
    with idempotency("pay", fingerprint="f") as again:
        assert again.result == "paid"
