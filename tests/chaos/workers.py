"""What runs in each worker process: lock, read-modify-write the counter, release, record it all."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.aws.breaker import DEFAULT_COOL_DOWN

from ..dynamodb.clocks import OffsetClock
from ..dynamodb_support import make_dynamodb
from . import otel_sample
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
    many: bool = False  # lock sets of 2-4 keys (listed in a random order) with acquire_many
    breaker_cool_down: float = DEFAULT_COOL_DOWN  # the client's circuit breaker's
    permits: int = 0  # take a permit of the semaphore whose permits ``keys`` are, instead of a key


class Sightings:
    """When this process first saw each key's holding (its record version) held, on its monotonic clock.

    The clock-free takeover rule sends its write a lease or more after the first sight of the version it
    replaces; the clock-bound rule sends it at once. That gap is the protocol's decision, whatever the
    machine's speed: how long the requests before and after it took does not enter it.
    """

    def __init__(self, client: LockClient) -> None:
        self._last: dict[str, tuple[str | None, float]] = {}  # key -> (version, first seen)
        self._lock = threading.Lock()
        observations = client.process_state.parts.observations
        saw = observations.saw

        def saw_and_note(lock_id: Any, info: Any, seen: Any) -> bool:
            held = saw(lock_id, info, seen)
            if held:
                with self._lock:
                    version, _ = self._last.get(lock_id[0], (None, 0.0))
                    if version != info.record_version_number or lock_id[0] not in self._last:
                        self._last[lock_id[0]] = (info.record_version_number, seen.monotonic)
            return held

        observations.saw = saw_and_note  # type: ignore[method-assign]  # instrumenting a test worker's client

    def watched(self, lease: Any) -> float | None:
        """Seconds from the first sight of the last holding seen on the lease's key to the write that won it."""
        with self._lock:
            sighting = self._last.pop(lease.key, None)
        return None if sighting is None else lease.safe_until - lease.lease_duration - sighting[1]

    def forget(self, key: str) -> None:
        with self._lock:
            self._last.pop(key, None)


def die_here(record: Recorder, now: bool, phase: str) -> None:
    if now:
        record("killed", worker=record.worker, phase=phase)
        os.kill(os.getpid(), signal.SIGKILL)


def counter_pk(config: WorkerConfig, key: str) -> int | None:
    index = config.keys.index(key)
    return index + 1 if index < config.hot_keys else None


def pick_keys(config: WorkerConfig, rng: random.Random) -> list[str]:
    """Mostly hot keys: one, or (``many``) 2-4 different ones in a random order."""

    def pick() -> str:
        hot = rng.random() < 0.8
        return rng.choice(config.keys[: config.hot_keys] if hot else config.keys[config.hot_keys :] or config.keys)

    if not config.many:
        return [pick()]
    keys: list[str] = []
    wanted = rng.randint(2, 4)
    while len(keys) < wanted:
        if (key := pick()) not in keys:
            keys.append(key)
    return keys


def write_counter(config: WorkerConfig, record: Recorder, rng: random.Random, lease: Any, kill_at: str) -> None:
    """Read-modify-write the key's counter row through the fence (cold keys have none: just hold)."""
    from django.db import OperationalError

    from dynalock_django.exceptions import LockLost, StaleFencingToken
    from dynalock_django.fencing import fenced_refresh, fenced_save
    from tests.django.testapp.models import Account

    key, token = lease.key, lease.fencing_token
    pk = counter_pk(config, key)
    if pk is None:
        time.sleep(config.hold)
        return
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
    except LockLost:  # the lease was known lost before the write: refused without a query
        record("write_rejected", key, token, stored=None)
    except OperationalError as error:
        record("write_failed", key, token, reason=str(error))


def wait_within(timeout: float, left: float, refresh: float) -> float:
    """A wait's timeout: the workload's, or what is left of the run's window (a refresh period at least).

    A wait begun near the window's end ends with it (by the timeout recorded with it, which the checker
    holds it to), instead of queueing for a hot key up to the workload's whole timeout past the end: up to
    4 s of each short workload went to draining such a line, one holder after another, on a loaded machine.
    Every property is checked on every operation all the same; only the run's tail is shorter.
    """
    return min(timeout, max(left, refresh))


def run(config: WorkerConfig) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DYNALOCK_TEST_DATABASE"] = config.database
    import django

    django.setup()
    write_metrics = otel_sample.start_if_asked(config.name)  # DYNALOCK_CHAOS_METRICS: a sample of them
    from dynalock_django.dynamodb import CircuitOpen, DynalockError, LockLost, split_permit_key

    record = Recorder(Path(config.history), config.name)
    rng = random.Random(config.seed)
    client = lock_client(config, breaker_cool_down=config.breaker_cool_down)
    sightings = Sightings(client)
    config.window.arrive()
    while (left := config.window.until() - time.monotonic()) > 0:
        # A semaphore's caller waits for any of its permits: every one of them is a key it waits for.
        keys = list(config.keys) if config.permits else pick_keys(config, rng)
        timeout = wait_within(config.timeout, left, config.refresh)
        for key in keys:
            record("acquire_start", key, timeout=timeout)
        for key in keys:
            sightings.forget(key)
        try:
            if config.permits:
                split = split_permit_key(config.keys[0])
                assert split is not None
                semaphore = client.semaphore(split[0], config.permits)
                group, leases = None, [semaphore.acquire(timeout=timeout)]
            elif config.many:
                group = client.acquire_many(keys, timeout=timeout)
                leases = list(group)
            else:
                group, leases = None, [client.acquire(keys[0], timeout=timeout)]
        except DynalockError as error:
            for key in keys:
                record("error", key, error=type(error).__name__)
                record("acquire_failed", key)
            if isinstance(error, CircuitOpen):  # told to come back later: not at once, as a real caller would
                time.sleep(min(error.retry_after, 0.1))
            continue
        for lease in leases:
            watched = sightings.watched(lease)
            record("acquired", lease.key, lease.fencing_token, safe_until=lease.safe_until, watched=watched)
            lease.add_lost_callback(lambda lost: record("lost_reported", lost.key, lost.fencing_token))
        kill_at = rng.choice(["before the write", "during the write", "after the write"])
        if rng.random() >= config.kill_probability:
            kill_at = ""
        for lease in leases:
            write_counter(config, record, rng, lease, kill_at)
        die_here(record, bool(kill_at), kill_at)
        for lease in leases:
            record("release_start", lease.key, lease.fencing_token, safe_until=lease.safe_until)
        try:
            if group is not None:
                group.release()
            else:
                leases[0].release()
            for lease in leases:
                record("released", lease.key, lease.fencing_token)
        except LockLost:
            record("error", keys[0], error="LockLost")
        except DynalockError as error:
            record("error", keys[0], error=type(error).__name__)
    client.close(release=True)
    write_metrics()
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


def lock_client(config: WorkerConfig | ProbeConfig, *, breaker_cool_down: float = DEFAULT_COOL_DOWN) -> LockClient:
    """The process's client: the workload's lease, its wall clock off by its offset, its takeover rule."""
    return LockClient(
        make_dynamodb(config.endpoint_url),
        config.table_name,
        lease_duration=config.lease,
        heartbeat_period=config.heartbeat,
        refresh_period=config.refresh,
        clock=OffsetClock(config.wall_offset),
        max_clock_skew=config.max_clock_skew,
        breaker_cool_down=breaker_cool_down,
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
    sightings = Sightings(client)
    record("acquire_start", config.key, timeout=10 * config.lease)
    lease = client.acquire(config.key, timeout=10 * config.lease)
    watched = sightings.watched(lease)
    record("acquired", config.key, lease.fencing_token, safe_until=lease.safe_until, watched=watched)
    record("release_start", config.key, lease.fencing_token, safe_until=lease.safe_until)
    lease.release()
    record("released", config.key, lease.fencing_token)
    client.close()
    record.close()
