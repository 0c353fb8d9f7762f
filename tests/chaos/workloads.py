"""The workloads, and the runner that starts their processes, injects faults and collects the history."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynalock_django.dynamodb import InvalidLockRequest, LockClient
from dynalock_django.dynamodb.aws.breaker import DEFAULT_COOL_DOWN

from ..dynamodb_support import BOTO_CONFIG, HEARTBEAT, LEASE, REFRESH, make_dynamodb, short_lease_client, unique
from ..java_client import JavaLockClient
from ..worker_processes import worker_context
from . import workers
from .checker import ClockBound, Verdict, check
from .history import Event, Recorder, load
from .proxy import FaultProxy, FaultRates
from .run_window import NotReady, RunWindow

forkserver = worker_context()
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Workload:
    name: str
    processes: int = 8
    duration: float = 30.0
    hot_keys: int = 2
    cold_keys: int = 20
    hold: float = 0.01
    timeout: float = 5.0
    fenced: bool = True
    control: bool = False  # expected to break a property: shows what the fence prevents
    faults: FaultRates | None = None
    endpoint_down: float = 0.0  # seconds, once, a third into the run
    kill_probability: float = 0.0
    pause_probability: float = 0.0
    wall_offsets: tuple[float, ...] = (0.0,)
    bad_data: bool = False
    max_clock_skew: float | None = None
    # Holders that die holding a key of their own, each followed, once its bound has passed, by a
    # waiter whose clock is the bound behind the holder's (the slowest within it): late arrivals.
    crash_probes: int = 0
    # Clocks skewed beyond max_clock_skew: a control in which holders may overlap, but the fence must hold.
    overlaps_allowed: bool = False
    many: bool = False  # sets of 2-4 keys with acquire_many
    endpoint_hang: float = 0.0  # seconds, once, a third into the run: requests accepted and never answered
    # Every wait must end within its timeout plus one read time-out (the rule of a bad day), not only a refresh.
    wait_within_read_timeout: bool = False
    breaker_cool_down: float = DEFAULT_COOL_DOWN  # the workers' circuit breaker's
    # A semaphore of this many permits (hot_keys as many, no cold keys): each permit is a key of the
    # history, so per-key exclusion and fencing are per permit, hence never more than that many holders.
    permits: int = 0


# The bound of the two clock-bound workloads. Within it, no two clocks differ by more than SKEW.
SKEW = 0.5


WORKLOADS = [
    Workload("contention"),
    Workload("kill", processes=6, hold=0.05, kill_probability=0.15),
    Workload("pause", processes=4, hot_keys=1, hold=0.05, pause_probability=0.2),
    Workload("pause-unfenced", processes=4, hot_keys=1, hold=0.05, pause_probability=0.2, fenced=False, control=True),
    Workload(
        "endpoint-faults",
        processes=6,
        faults=FaultRates(latency=0.05, drop=0.02, lost_response=0.03, error_500=0.03, throttle=0.03),
    ),
    Workload("endpoint-down", processes=4, endpoint_down=2.5 * LEASE),
    Workload("clock-skew", processes=4, wall_offsets=(-600.0, 0.0, 300.0, 7200.0)),
    Workload("bad-data", processes=4, bad_data=True),
    Workload(
        "skew-within-bound",
        processes=4,
        hold=0.05,
        kill_probability=0.15,
        wall_offsets=(-SKEW / 2, SKEW / 2, 0.0, -SKEW / 4),
        max_clock_skew=SKEW,
        crash_probes=2,
    ),
    Workload(
        "skew-beyond-bound",
        processes=4,
        hot_keys=1,
        cold_keys=0,
        hold=0.3,
        wall_offsets=(-3.0, 0.0, 3.0, 0.0),
        max_clock_skew=SKEW,
        overlaps_allowed=True,
    ),
    # A bad day: answers delayed past the read time-out (the write lands after its caller gave up), lost
    # after landing, and a few seconds of an endpoint that accepts requests and answers none.
    Workload(
        "brownout",
        processes=6,
        hold=0.02,
        timeout=2.0,
        faults=FaultRates(latency=0.05, latency_seconds=0.8, lost_response=0.03, error_500=0.01),
        endpoint_hang=2 * LEASE,
        wait_within_read_timeout=True,
        breaker_cool_down=LEASE / 2,  # the suite's leases are 1/20 of the defaults; so is its cool-down
    ),
    Workload(
        "many",
        processes=6,
        hot_keys=4,
        cold_keys=6,
        hold=0.02,
        many=True,
        kill_probability=0.05,
        pause_probability=0.05,
        faults=FaultRates(
            latency=0.05, drop=0.02, lost_response=0.03, error_500=0.03, throttle=0.03, lost_transaction=0.1
        ),
    ),
    Workload(
        "semaphore",
        processes=5,
        hot_keys=2,
        cold_keys=0,
        permits=2,
        hold=0.02,
        kill_probability=0.1,
        faults=FaultRates(latency=0.05, lost_response=0.03, error_500=0.02),
    ),
]


@dataclass
class Outcome:
    workload: Workload
    verdict: Verdict
    faults: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def run(workload: Workload, endpoint_url: str, seed: int, workdir: Path, duration: float) -> Outcome:
    started = time.monotonic()
    directory = workdir / workload.name
    history = directory / "history"
    history.mkdir(parents=True)
    with contextlib.closing(Recorder(history, "runner")) as record:  # closed on failure too
        table = unique("chaos")
        LockClient(make_dynamodb(endpoint_url), table).create_table()
        database = directory / "resource.sqlite3"
        _create_database(database, workload.hot_keys)
        keys = tuple(f"counter-{i}" for i in range(workload.hot_keys)) + tuple(
            f"cold-{i}" for i in range(workload.cold_keys)
        )
        if workload.permits:  # the permits' own keys, as client.semaphore("counter", permits) writes them
            keys = tuple(f"counter#permit-{i}" for i in range(workload.permits))
        faults: dict[str, int] = {}
        if workload.bad_data:
            keys += _write_bad_data(endpoint_url, table, record, faults)
        if workload.crash_probes:
            faults["crash probes"] = workload.crash_probes
        proxy = None
        if workload.faults or workload.endpoint_down or workload.endpoint_hang:
            proxy = FaultProxy(endpoint_url, workload.faults or FaultRates(), seed)
        with proxy or contextlib.nullcontext():
            url = proxy.url if proxy else endpoint_url
            window = RunWindow(forkserver)
            configs = [
                workers.WorkerConfig(
                    name=f"w{i}",
                    endpoint_url=url,
                    table_name=table,
                    database=str(database),
                    history=str(history),
                    seed=seed * 1000 + i,
                    window=window,
                    keys=keys,
                    hot_keys=workload.hot_keys,
                    lease=LEASE,
                    heartbeat=HEARTBEAT,
                    refresh=REFRESH,
                    timeout=workload.timeout,
                    hold=workload.hold,
                    fenced=workload.fenced,
                    wall_offset=workload.wall_offsets[i % len(workload.wall_offsets)],
                    kill_probability=workload.kill_probability,
                    pause_probability=workload.pause_probability,
                    max_clock_skew=workload.max_clock_skew,
                    many=workload.many,
                    breaker_cool_down=workload.breaker_cool_down,
                    permits=workload.permits,
                )
                for i in range(workload.processes)
            ]
            probes = [
                threading.Thread(target=_crash_probe, args=(url, table, history, f"probe-{i}", workload), daemon=True)
                for i in range(workload.crash_probes)
            ]
            for probe in probes:
                probe.start()
            _supervise(configs, proxy, workload, record, window, duration, faults)
            for probe in probes:
                probe.join(30)
                if probe.is_alive():
                    record("violation", property="every crash probe ends")
            if proxy:
                faults.update(proxy.injected)
        with contextlib.closing(sqlite3.connect(database)) as db, db:
            for pk, balance in db.execute("SELECT id, balance FROM testapp_account ORDER BY id"):
                record("final_counter", keys[pk - 1], value=balance)
    events = load(history)
    bound = None if workload.max_clock_skew is None else ClockBound(LEASE, workload.max_clock_skew)
    verdict = check(
        events,
        heartbeat=HEARTBEAT,
        refresh=REFRESH,
        control=workload.control,
        overlaps_allowed=workload.overlaps_allowed,
        clock_bound=None if workload.overlaps_allowed else bound,
        read_timeout=BOTO_CONFIG.read_timeout if workload.wait_within_read_timeout else None,
    )
    _check_recorded_violations(events, verdict)
    outside = [e for e in events if e.kind == "acquired" and workload.permits and e.key not in keys]
    if outside:
        verdict.fail("a semaphore's holders hold its permits, no other key", outside[:5])
    if verdict.operations == 0:
        verdict.fail("the workers ran: a run without one lock taken proves nothing", [])
    if workload.control and verdict.lost_updates + verdict.stale_writes_accepted == 0:
        verdict.fail("the unfenced control shows the lost update the fence prevents", [])
    return Outcome(workload, verdict, faults, time.monotonic() - started)


def _supervise(
    configs: list[workers.WorkerConfig],
    proxy: FaultProxy | None,
    workload: Workload,
    record: Recorder,
    window: RunWindow,
    duration: float,
    faults: dict[str, int],
) -> None:
    """Start the workers; respawn the killed, resume the paused, take the endpoint down once."""
    processes = {config.name: _start(config) for config in configs}
    try:
        run_until = window.open_when_ready(len(configs), duration)
    except NotReady as slow:
        for process in processes.values():
            process.kill()
            process.join()
        record("violation", property=f"every worker starts ({slow})")
        return
    stopped_since: dict[str, float] = {}
    spawned = len(configs)
    outage = workload.endpoint_down or workload.endpoint_hang
    down_at = time.monotonic() + (run_until - time.monotonic()) / 3 if outage else None
    while time.monotonic() < run_until + 15 and any(p.is_alive() for p in processes.values()):
        now = time.monotonic()
        if down_at is not None and now >= down_at and proxy is not None:
            _outage(proxy, workload, record, faults)
            down_at = None
        for name, process in list(processes.items()):
            if (
                process.exitcode == -signal.SIGKILL and now < run_until - 1
            ):  # killed itself: a new process takes its place
                faults["kills"] = faults.get("kills", 0) + 1
                del processes[name]
                config = dataclasses.replace(configs[0], name=f"w{spawned}", seed=configs[0].seed + spawned)
                spawned += 1
                processes[config.name] = _start(config)
            elif process.is_alive() and _is_stopped(process.pid):
                first_seen = stopped_since.setdefault(name, now)
                if now - first_seen >= 2 * LEASE:  # paused well past its lease
                    os.kill(process.pid, signal.SIGCONT)
                    record("resumed", worker=name, lease=LEASE)
                    faults["pauses"] = faults.get("pauses", 0) + 1
                    del stopped_since[name]
        time.sleep(0.02)
    for name, process in processes.items():
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join()
            record("violation", property=f"every run stops by itself (worker {name} had to be killed)")
        elif process.exitcode not in (0, -signal.SIGKILL):
            record("violation", property=f"workers never crash (worker {name} exited with {process.exitcode})")


def _outage(proxy: FaultProxy, workload: Workload, record: Recorder, faults: dict[str, int]) -> None:
    if workload.endpoint_down:
        proxy.down(workload.endpoint_down)
        record("endpoint_down", seconds=workload.endpoint_down)
        faults["endpoint down"] = faults.get("endpoint down", 0) + 1
    if workload.endpoint_hang:
        proxy.hang(workload.endpoint_hang)
        record("endpoint_hang", seconds=workload.endpoint_hang)
        faults["endpoint hung"] = faults.get("endpoint hung", 0) + 1


def _crash_probe(url: str, table: str, history: Path, name: str, workload: Workload) -> None:
    assert workload.max_clock_skew is not None
    skew = workload.max_clock_skew
    config = workers.ProbeConfig(
        f"{name}-holder", url, table, str(history), unique(name), LEASE, HEARTBEAT, REFRESH, skew / 2, skew
    )
    holder = forkserver.Process(target=workers.hold_then_die, args=(config,))
    holder.start()
    holder.join(60)
    time.sleep(ClockBound(LEASE, skew).at_once_after)
    waiter = forkserver.Process(
        target=workers.arrive_late,
        args=(dataclasses.replace(config, name=f"{name}-waiter", wall_offset=-skew / 2),),
    )
    waiter.start()
    waiter.join(60)


def _start(config: workers.WorkerConfig) -> Any:
    process = forkserver.Process(target=workers.run, args=(config,), name=config.name)
    process.start()
    return process


def _is_stopped(pid: int | None) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "T"


@functools.cache
def _migrated_database() -> Path:
    """One migrated database a run (``manage.py migrate`` takes seconds); each workload starts from a copy."""
    folder = Path(tempfile.mkdtemp(prefix="dynalock-chaos-db-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "migrated.sqlite3"
    subprocess.run(
        # --skip-checks: DYNALOCK in tests/settings.py names no table on purpose; the workers get theirs
        [sys.executable, "manage.py", "migrate", "-v0", "--skip-checks", "--settings=tests.settings"],
        env={**os.environ, "DYNALOCK_TEST_DATABASE": str(path)},
        check=True,
        cwd=REPO,
    )
    return path


def _create_database(path: Path, counters: int) -> None:
    shutil.copyfile(_migrated_database(), path)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.executemany(
            "INSERT INTO testapp_account (id, name, balance) VALUES (?, ?, 0)",
            [(pk, f"counter-{pk - 1}") for pk in range(1, counters + 1)],
        )


def _write_bad_data(endpoint_url: str, table: str, record: Recorder, faults: dict[str, int]) -> tuple[str, ...]:
    """Foreign and malformed items, huge payloads, keys at the size limit; checked as the run goes."""
    dynamodb = make_dynamodb(endpoint_url)
    client = short_lease_client(dynamodb, table)
    malformed = "bad-malformed"
    dynamodb.put_item(
        TableName=table,
        Item={"key": {"S": malformed}, "leaseDuration": {"S": "soon"}, "recordVersionNumber": {"N": "7"}},
    )
    java_key = "bad-java-abandoned"
    JavaLockClient(dynamodb, table, owner_name="java-host-9", lease_ms=int(LEASE * 1000)).acquire_new(java_key)
    record("java_item_written", java_key, lease=LEASE)
    max_key = "k" * 2048
    faults["bad items"] = 2
    # Malformed: held by "unknown" for the safe default (300 s): nobody may take it during the run.
    if client.try_acquire(malformed) is not None or client.try_acquire(malformed) is not None:
        record("violation", malformed, property="a malformed item is not overwritten before its safe default")
    # The largest payload that fits in DynamoDB's 400 KB item, and one byte too many.
    try:
        client.acquire(unique("huge"), data=b"x" * 1_000_000).release()
        record("violation", property="an oversized payload is refused before any request")
    except InvalidLockRequest:
        pass
    huge = client.acquire(unique("huge"), data=b"x" * 390_000)
    huge.release()
    try:
        client.acquire(max_key + "k").release()
        record("violation", property="a key over 2048 bytes is refused")
    except InvalidLockRequest:
        pass
    client.close()
    return (java_key, max_key)


def _check_recorded_violations(events: list[Event], verdict: Verdict) -> None:
    for event in events:
        if event.kind == "violation":
            verdict.fail(event.data["property"], [event])
    # The Java client's abandoned lock must be taken over, and not before its lease ran out.
    written = next((e for e in events if e.kind == "java_item_written"), None)
    if written is None:
        return
    taken = [e for e in events if e.kind == "acquired" and e.key == written.key]
    wanted = any(e.kind == "acquire_start" and e.key == written.key for e in events)
    if (wanted and not taken) or (taken and taken[0].t < written.t + written.data["lease"]):
        verdict.fail("an abandoned Java-client lock is taken over after its lease", [written, *taken[:1]])
