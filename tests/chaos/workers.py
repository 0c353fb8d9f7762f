"""What runs in each worker process: lock, read-modify-write the counter, release, record it all."""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from dynalock_django.dynamodb import LockClient

from ..dynamodb_support import make_dynamodb
from ..protocol.fake_clock import OffsetClock
from .history import Recorder
from .run_window import RunWindow


@dataclass(frozen=True)
class WorkerConfig:
    name: str
    endpoint_url: str
    table_name: str
    database: str
    history: str
    seed: int
    window: RunWindow  # when to stop
    keys: tuple[str, ...]
    hot_keys: int  # the first keys are hot: chosen most of the time, and each has a counter row
    lease: float
    heartbeat: float
    refresh: float
    timeout: float
    hold: float  # seconds between reading the counter and writing it back
    fenced: bool = True
    wall_offset: float = 0.0  # seconds this process's wall clock is off
    max_clock_skew: float | None = None  # the client's option: the clock-bound takeover rule
    kill_probability: float = 0.0  # per holding: SIGKILL itself before, during or after the write
    pause_probability: float = 0.0  # per holding: SIGSTOP itself between read and write (the runner resumes it)


def die_here(record: Recorder, now: bool, phase: str) -> None:
    if now:
        record("killed", worker=record.worker, phase=phase)
        os.kill(os.getpid(), signal.SIGKILL)


def counter_pk(config: WorkerConfig, key: str) -> int | None:
    index = config.keys.index(key)
    return index + 1 if index < config.hot_keys else None


def run(config: WorkerConfig) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DYNALOCK_TEST_DATABASE"] = config.database
    import django

    django.setup()
    from django.db import OperationalError

    from dynalock_django.dynamodb import DynalockError, LockLost, LockTimeout
    from dynalock_django.exceptions import StaleFencingToken
    from dynalock_django.fencing import fenced_refresh, fenced_save
    from tests.django.testapp.models import Account

    record = Recorder(Path(config.history), config.name)
    rng = random.Random(config.seed)
    client = lock_client(config)
    config.window.arrive()
    while time.monotonic() < config.window.until():
        hot = rng.random() < 0.8
        key = rng.choice(config.keys[: config.hot_keys] if hot else config.keys[config.hot_keys :] or config.keys)
        record("acquire_start", key, timeout=config.timeout)
        try:
            lease = client.acquire(key, timeout=config.timeout)
        except LockTimeout:
            record("error", key, error="LockTimeout")
            record("acquire_failed", key)
            continue
        except DynalockError as error:
            record("error", key, error=type(error).__name__)
            record("acquire_failed", key)
            continue
        token = lease.fencing_token
        record("acquired", key, token, safe_until=lease.safe_until)
        lease.add_lost_callback(lambda lost: record("lost_reported", lost.key, lost.fencing_token))
        pk = counter_pk(config, key)
        kill_at = rng.choice(["before the write", "during the write", "after the write"])
        if rng.random() >= config.kill_probability:
            kill_at = ""
        if pk is not None:
            account = Account(pk=pk)
            die_here(record, kill_at == "before the write", kill_at)
            record("write_attempt", key, token, safe_until=lease.safe_until)
            try:
                if config.fenced:
                    fenced_refresh(account, lease)  # claim the row before reading it
                else:
                    account.refresh_from_db()
                record("claimed", key, token)
                time.sleep(config.hold)
                die_here(record, kill_at == "during the write", kill_at)
                if rng.random() < config.pause_probability:
                    record("paused", key, token, worker=config.name)
                    os.kill(os.getpid(), signal.SIGSTOP)  # a long GC pause; the runner sends SIGCONT
                account.balance += 1
                if config.fenced:
                    fenced_save(account, lease, update_fields=["balance"])
                else:
                    account.save(update_fields=["balance"])
                record("write_ok", key, token, value=account.balance, safe_until=lease.safe_until)
            except StaleFencingToken as stale:
                record("write_rejected", key, token, stored=stale.stored_token)
            except OperationalError as error:
                record("write_failed", key, token, reason=str(error))
        else:
            time.sleep(config.hold)
        die_here(record, bool(kill_at), kill_at)
        record("release_start", key, token, safe_until=lease.safe_until)
        try:
            lease.release()
            record("released", key, token)
        except LockLost:
            record("error", key, token, error="LockLost")
        except DynalockError as error:
            record("error", key, token, error=type(error).__name__)
    client.close(release=True)
    record.close()


@dataclass(frozen=True)
class ProbeConfig:
    """A crash probe's process: one holder that dies holding ``key``, or one waiter that arrives late for it."""

    name: str
    endpoint_url: str
    table_name: str
    history: str
    key: str
    lease: float
    heartbeat: float
    refresh: float
    wall_offset: float
    max_clock_skew: float | None


def lock_client(config: WorkerConfig | ProbeConfig) -> LockClient:
    """The process's client: the workload's lease, its wall clock off by its offset, its takeover rule."""
    return LockClient(
        make_dynamodb(config.endpoint_url),
        config.table_name,
        lease_duration=config.lease,
        heartbeat_period=config.heartbeat,
        refresh_period=config.refresh,
        clock=OffsetClock(config.wall_offset),
        max_clock_skew=config.max_clock_skew,
    )


def _probe_client(config: ProbeConfig) -> tuple[LockClient, Recorder]:
    return lock_client(config), Recorder(Path(config.history), config.name)


def hold_then_die(config: ProbeConfig) -> None:
    """Take the key, renew it a couple of times, and die holding it (SIGKILL)."""
    client, record = _probe_client(config)
    lease = client.acquire(config.key, timeout=10 * config.lease)
    record("acquired", config.key, lease.fencing_token, safe_until=lease.safe_until)
    time.sleep(2.5 * config.heartbeat)
    record("holding", config.key, lease.fencing_token, safe_until=lease.safe_until)
    die_here(record, True, "while holding")


def arrive_late(config: ProbeConfig) -> None:
    """Take the key a dead holder left, and let it go."""
    client, record = _probe_client(config)
    record("acquire_start", config.key, timeout=10 * config.lease)
    lease = client.acquire(config.key, timeout=10 * config.lease)
    record("acquired", config.key, lease.fencing_token, safe_until=lease.safe_until)
    record("release_start", config.key, lease.fencing_token, safe_until=lease.safe_until)
    lease.release()
    record("released", config.key, lease.fencing_token)
    client.close()
    record.close()
