"""Chaos for run-once tasks: real workers, many enqueues, SIGKILLs at random, redeliveries and retries.

python -m tests.django.tasks.chaos [--framework celery|db_worker|huey|rq] [--seconds S] [--seed N] [--workers N]

Per framework, workers run ``chaos_jobs``' tasks (a few names, each its own lock; one, ``pair``, with
``@lock_task(limit=2)``: two runs at once, never three) while the driver
enqueues copies, some long and (Celery) some failing once for ``autoretry_for`` to retry, and now
and then SIGKILLs a process running one: a pool process, or its whole worker (then it starts another;
a ``db_worker`` runs its task itself, so there it is always the whole worker). Celery
runs on a Redis broker with ``acks_late``, ``reject_on_worker_lost`` and a visibility timeout shorter
than the long copies, so the broker hands out copies that still run; django-tasks-db's ``db_worker``
never reruns a killed worker's task, so the driver does what its operator must: enqueue it again.
Then every copy must end (ran, or skipped visibly), and the last workers are killed mid-task: two
leases later every key must be free. The properties are read from the tasks' own records
(task_history.py): no run overlaps another of its key, tokens only grow, nothing unaccounted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django

from dynalock_django.dynamodb import LockTimeout

from ...chaos.history import Recorder, load
from ...dynamodb_support import PATIENCE, make_dynamodb, short_lease_client
from ..processes import ROOT, manage_py_environment
from .chaos_huey_rq import QUEUES
from .chaos_workers import PYTHON, Framework, Worker, kill
from .environment import BROKER, EVENTS, VISIBILITY
from .task_history import LIMITS, TaskChaosReport, enqueued_ids, peak, render, task_runs, unaccounted
from .workers import redis_server

FRAMEWORKS = ("celery", "db_worker", "huey", "rq", "dramatiq", "django_q")  # CI: its legs split them (test_task_chaos)
# Longer than the suite's 1 s: a loaded machine must not lose a running copy's lease (that would be an
# overlap the fence, not the lock, has to catch: tests/chaos does that).
LEASE, HEARTBEAT = 2.0, 0.5
# How often a waiting copy reads the holder's item: a copy behind a live holder gives up once it sees a renewal
# (within a heartbeat), one behind a killed holder takes over a lease after its last renewal. Every worker slot
# may wait so, behind the holders a kill left: at the suite's 0.1 s, their reads were most of the local store's
# work (one request at a time) and of the run's time on a loaded machine.
REFRESH = 0.25
# The suite's 0.5 s read time-out is for its fault tests; here, dozens of worker processes on a loaded machine ask
# a local store that may answer one request at a time (moto), and a copy that cannot ask for its lock
# fails without running: this run is about kills and redeliveries, so the workers wait up to 1 s
# (a call still fits in the lease's slack: 0.25 + 1.0 < 2.0 - 0.5).
BOTO_CONFIG = {"connect_timeout": 0.25, "read_timeout": 1.0, "retries": {"total_max_attempts": 1}}
VISIBILITY_SECONDS = 3.0  # Celery: a long copy runs past it, and the broker hands it out again
LENGTHS = (0.2, 0.5, 1.0)  # seconds a copy works; a long one (LONG_SHARE of them) runs past the visibility timeout
LONG, LONG_SHARE = VISIBILITY_SECONDS + 1.5, 0.15
FLAKY_SHARE = 0.2  # Celery: copies whose first attempt fails and is retried
NAMES = 3  # the limited name (task_history.LIMITS: two runs at once) among them: a db_worker runs one copy, and
# the last kill needs a run of every name going at once on the three workers
PAIR_SHARE = 1 / NAMES
KILL_EVERY, WHOLE_WORKER_SHARE = 2.5, 0.35
# ``make chaos``'s copies per framework (at least; the CI test's are test_task_chaos.COPIES). Celery's and
# db_worker's copies come at the storm's own pace (a few a second).
MAKE_CHAOS_COPIES = {"huey": 1000, "rq": 1000, "dramatiq": 1000, "django_q": 1000}
# Copies a second, at most, in make chaos's long runs: the three workers of 15 to 18 slots end (run, or skip after
# watching a live holder for about a heartbeat) 7 to 10 copies a second between kills on the shared 2-core machine,
# so the storm's copies mostly end while it lasts, under its kills, not in the settling after it (the CI test's
# 200 copies, ~17/s for 12 s, end within 10 to 20 s).
MAX_RATE = 5.0
BEAT = 250  # ms: the storm's mean pause between enqueues (0.1 to 0.4 s)
# Seconds with no copy ending before the settling gives up (a queue that lost a copy never settles), and for a
# probe to start; the settling itself ends within SETTLE plus SETTLE_PER_COPY a copy enqueued (a long storm's
# backlog ends at the workers' pace).
SETTLE, SETTLE_PER_COPY = 90.0, 0.5
PROBE_AGAIN = 2.0  # seconds before a key whose probe has not begun gets another


class CeleryFramework(Framework):
    name = "celery"
    retries = True
    warm_imports = ("celery.bin.celery", "tests.django.tasks.celery_app")
    task = "tests.django.tasks.chaos_jobs.celery_chaos"
    pair_task = "tests.django.tasks.chaos_jobs.celery_chaos_pair"

    def __init__(self, env: dict[str, str], broker: str, workdir: Path, driver: Recorder) -> None:
        from celery import Celery

        self.env = {**env, BROKER: broker, VISIBILITY: str(VISIBILITY_SECONDS)}
        self.workdir = workdir
        self.driver = driver
        self.sender = Celery("chaos-sender", broker=broker)

    def worker_command(self, ident: str) -> list[str]:
        command = ["-m", "celery", "-A", "tests.django.tasks.celery_app", "worker", "--pool=prefork", "-c", "2"]
        command += ["-n", f"{ident}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        return [*command, "-l", "warning"]

    def enqueue(self, name: str, seconds: float, flaky: bool, probe: bool) -> None:
        task_id = uuid.uuid4().hex
        self.driver("enqueued", name, id=task_id, probe=probe)  # before: a quick worker may record it first
        task = self.pair_task if name in LIMITS else self.task
        self.sender.send_task(task, args=(name, seconds, flaky), task_id=task_id)

    def queue_state(self) -> str:
        import redis

        client = redis.Redis.from_url(self.env[BROKER])
        try:
            queued, unacked, lock = client.llen("celery"), client.hlen("unacked"), client.ttl("unacked_mutex")
        finally:
            client.close()
        return f"{queued} queued, {unacked} unacknowledged, kombu's restore lock expires in {lock} s (-2: free)"

    def close(self) -> None:
        self.sender.close()


class DatabaseQueueFramework(Framework):
    """A queue whose broker is a table of a SQLite file the workers share, fed by a process of the test's
    (``queue_module``) on the workers' settings (``settings_module``)."""

    settings_module: str
    queue_module: str
    database = "tasks.sqlite3"
    extra_env: dict[str, str] = {}

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.env = {**env, "DJANGO_SETTINGS_MODULE": self.settings_module, **self.extra_env}
        self.env["DYNALOCK_TEST_DATABASE"] = str(workdir / self.database)
        self.workdir = workdir
        subprocess.run(
            [PYTHON, "manage.py", "migrate", "-v0", "--skip-checks"], cwd=ROOT, env=self.env, check=True, timeout=120
        )
        self.queue = subprocess.Popen(
            [PYTHON, "-m", self.queue_module],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )


class DbWorkerFramework(DatabaseQueueFramework):
    name = "db_worker"
    warm_imports = ("tests.django.tasks.chaos_jobs",)
    settings_module = "tests.django.tasks.db_worker_settings"
    queue_module = "tests.django.tasks.db_queue"

    def worker_command(self, ident: str) -> list[str]:
        return ["manage.py", "db_worker", "--interval", "0.05", "--no-startup-delay", "--worker-id", ident]

    def enqueue(self, name: str, seconds: float, flaky: bool, probe: bool) -> None:
        self._ask({"enqueue": [name, seconds], "probe": probe})

    def after_worker_killed(self, worker: Worker) -> None:
        self._ask({"requeue": worker.ident})

    def close(self) -> None:
        try:
            self.queue.communicate(timeout=PATIENCE)  # its stdin closed: it ends, and its pipes are closed
        except subprocess.TimeoutExpired:
            self.queue.kill()
            self.queue.communicate()

    def _ask(self, command: dict[str, Any]) -> Any:
        assert self.queue.stdin is not None
        assert self.queue.stdout is not None
        self.queue.stdin.write(json.dumps(command) + "\n")
        self.queue.stdin.flush()
        answer = self.queue.stdout.readline()
        assert answer, f"the queue process ended (exit {self.queue.poll()})"
        return json.loads(answer)


class ChaosRun:
    """One framework's run: its workers, the storm of enqueues and kills, the settling, the last kill."""

    def __init__(self, framework: Framework, events: Path, driver: Recorder, rng: random.Random) -> None:
        self.framework = framework
        self.events = events
        self.driver = driver
        self.rng = rng
        self.workers: list[Worker] = []
        self.started_workers = 0
        self.starter = framework.starter()

    def start_worker(self) -> None:
        """A worker begins, forked by the run's starter (chaos_workers.Starter): at once, as a killed one's
        replacement."""
        self.workers.append(self.framework.start_worker(f"chaos-{self.started_workers}", self.starter))
        self.started_workers += 1

    def storm(self, seconds: float, copies: int = 0) -> None:
        """Enqueue and kill for ``seconds`` (and until ``copies`` were enqueued, a few a beat), then on (up to as
        long again) until the chaos has shown its faults."""
        flaky_share = FLAKY_SHARE if self.framework.retries else 0.0
        per_beat = max(1, -(-copies * BEAT // int(seconds * 1000)))  # the storm's beats average BEAT ms
        start = time.monotonic()
        next_kill = start + KILL_EVERY
        enqueued = 0
        while (
            time.monotonic() < start + seconds
            or enqueued < copies
            or (time.monotonic() < start + 2 * seconds and not self.enough())
        ):
            for _ in range(per_beat):
                length = LONG if self.rng.random() < LONG_SHARE else self.rng.choice(LENGTHS)
                paired = self.rng.random() < PAIR_SHARE
                name = self.rng.choice(sorted(LIMITS)) if paired else f"n{self.rng.randrange(NAMES - len(LIMITS))}"
                self.framework.enqueue(name, length, self.rng.random() < flaky_share, probe=False)
                enqueued += 1
            if time.monotonic() >= next_kill and self.kill_a_running_copy():
                next_kill = time.monotonic() + KILL_EVERY  # a try that found nothing running is tried again
            time.sleep(self.rng.uniform(0.1, 0.4))

    def enough(self) -> bool:
        """A run killed mid-task and followed on its key, (Celery) a retried first attempt, and a limited name's
        runs at their limit: what the test needs."""
        runs = task_runs(load(self.events))
        if any(peak(runs, name) < limit for name, limit in LIMITS.items()):
            return False
        killed = [run for run in runs if run.outcome == "killed" and run.ended is not None]
        followed = any(later.name == run.name and later.started > run.ended for run in killed for later in runs)
        retried = any(run.outcome == "retry" for run in runs) or not self.framework.retries
        return followed and retried

    def kill_a_running_copy(self) -> bool:
        """SIGKILL a process running a copy (now and then its whole worker); False when none was running."""
        running = [run.pid for run in task_runs(load(self.events)) if run.outcome == "unfinished"]
        if not running:
            return False
        pid = self.rng.choice(running)
        worker = next((w for w in self.workers if pid in w.pids()), None)
        if worker is None:
            return False  # it ended meanwhile
        if worker.pid == pid or self.framework.whole_workers or self.rng.random() < WHOLE_WORKER_SHARE:
            worker.kill(lambda pids: self.driver("kill", pids=pids, worker=True))
            self.workers.remove(worker)
            self.start_worker()
            self.framework.after_worker_killed(worker)
        else:
            kill(pid, lambda pids: self.driver("kill", pids=pids, worker=False))
        return True

    def settle(self) -> None:
        """Until every copy enqueued so far ran or skipped and no run is going on: given up once no copy ended for
        SETTLE seconds, and after SETTLE plus SETTLE_PER_COPY a copy enqueued."""
        start = progress = time.monotonic()
        limit = start + SETTLE + SETTLE_PER_COPY * len(enqueued_ids(load(self.events)))
        left: int | None = None
        while True:
            events = load(self.events)
            missing = unaccounted(events)
            going = [run for run in task_runs(events) if run.outcome == "unfinished"]
            if not missing and not going:
                return
            now = time.monotonic()
            if left is None or len(missing) < left:
                left, progress = len(missing), now
            if now > min(progress + SETTLE, limit):  # the report names what is missing; the test's output, the queue
                print(f"not settled after {now - start:.0f} s: {self.framework.queue_state()}", file=sys.stderr)
                return
            time.sleep(0.2)

    def kill_the_last_workers_mid_task(self) -> float:
        """A long probe per name, and once every name has a run going, every worker killed: when they died.

        A probe may skip (a late copy handed out again holds its key for a moment): another is enqueued.
        """
        names = sorted({e.key for e in load(self.events) if e.kind == "enqueued"})
        deadline = time.monotonic() + SETTLE
        probed: dict[str, float] = {}
        while time.monotonic() < deadline:
            running = {run.name for run in task_runs(load(self.events)) if run.outcome == "unfinished"}
            if running >= set(names):
                break
            for name in set(names) - running:
                if time.monotonic() - probed.get(name, -PROBE_AGAIN) >= PROBE_AGAIN:
                    self.framework.enqueue(name, 10 * SETTLE, flaky=False, probe=True)
                    probed[name] = time.monotonic()
            time.sleep(0.1)
        for worker in self.workers:
            worker.kill(lambda pids: self.driver("kill", pids=pids, worker=True, last=True))
        return self.driver("dead")


def run(
    framework_name: str,
    settings: dict[str, Any],
    workdir: Path,
    *,
    seconds: float,
    seed: int,
    workers: int,
    copies: int = 0,
) -> TaskChaosReport:
    """One framework's chaos run on the lock table of ``settings`` (the suite's DYNALOCK); its report.

    ``copies``: at least so many copies are enqueued (a few at each beat of the storm).
    """
    settings = {**settings, "LEASE_DURATION": LEASE, "HEARTBEAT_PERIOD": HEARTBEAT, "REFRESH_PERIOD": REFRESH}
    settings["BOTO_CONFIG"] = BOTO_CONFIG
    events = workdir / "events"
    events.mkdir(parents=True, exist_ok=True)
    driver = Recorder(events, "driver")
    env = manage_py_environment(settings, "tests.settings", **{EVENTS: str(events)})
    began = time.monotonic()
    try:
        with _framework(framework_name, env, workdir, driver) as framework:
            chaos = ChaosRun(framework, events, driver, random.Random(seed))
            try:
                for _ in range(workers):
                    chaos.start_worker()
                chaos.storm(seconds, copies)
                chaos.settle()
                dead = chaos.kill_the_last_workers_mid_task()
                stuck, freed_at = _keys_still_held(settings, dead)  # at once: the two leases run from the kill
            finally:
                for worker in chaos.workers:
                    if not worker.dead:  # not waited for yet: its session may still run
                        worker.kill()
                chaos.starter.close()
    finally:
        driver.close()
    report = TaskChaosReport.of(framework_name, LEASE, load(events), stuck)
    report.last_freed_after = (freed_at - dead) / LEASE if freed_at is not None else None
    report.seconds = time.monotonic() - began
    return report


@contextlib.contextmanager
def _framework(name: str, env: dict[str, str], workdir: Path, driver: Recorder) -> Iterator[Framework]:
    framework: Framework
    with contextlib.ExitStack() as stack:
        if name == "celery":
            framework = CeleryFramework(env, stack.enter_context(redis_server()), workdir, driver)
        elif name in QUEUES:
            framework = QUEUES[name](env, stack.enter_context(redis_server()), workdir, driver, workdir / "events")
        elif name == "dramatiq":
            from .chaos_dramatiq_django_q import DramatiqFramework

            framework = DramatiqFramework(env, stack.enter_context(redis_server()), workdir, driver)
        elif name == "django_q":
            from .chaos_dramatiq_django_q import DjangoQFramework

            framework = DjangoQFramework(env, workdir)
        else:
            framework = DbWorkerFramework(env, workdir)
        stack.callback(framework.close)
        yield framework


def _keys_still_held(settings: dict[str, Any], dead: float) -> tuple[list[str], float | None]:
    """The keys a fresh client cannot take within two leases of the last worker's death; when it took them."""
    client = short_lease_client(
        make_dynamodb(settings["ENDPOINT_URL"], read_timeout=BOTO_CONFIG["read_timeout"]),
        settings["TABLE_NAME"],
        lease_duration=LEASE,
        heartbeat_period=HEARTBEAT,
    )
    try:
        held = [lock.key for lock in client.scan() if not lock.is_released]
        if not held:
            return [], time.monotonic()
        try:
            group = client.acquire_many(held, timeout=max(0.0, dead + 2 * LEASE - time.monotonic()))
        except LockTimeout:
            return [lock.key for lock in client.scan() if not lock.is_released], None
        freed_at = time.monotonic()
        group.release()
        return [], freed_at
    finally:
        client.close(release=False)


def worker_logs(workdir: Path, lines: int = 40) -> str:
    """The last ``lines`` of each worker's log, for a failed run's report."""
    tails = []
    for log in sorted(workdir.glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        tails.append(f"--- {log.name}\n" + "\n".join(tail))
    return "\n".join(tails)


def main(argv: list[str] | None = None) -> int:
    from dynalock_django.testing import lock_table

    from ...dynamodb_support import SHORT_LEASE_SETTINGS
    from ...stores import shared_endpoint_url

    parser = argparse.ArgumentParser(prog="python -m tests.django.tasks.chaos", description=__doc__)
    parser.add_argument("--framework", action="append", choices=FRAMEWORKS)
    parser.add_argument("--seconds", type=float, default=30.0, help="Seconds of enqueues and kills per framework.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--copies", type=int, help=f"At least so many copies per framework (default: {MAKE_CHAOS_COPIES}, or 0)."
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")  # the suite's, as the workers get them
    django.setup()
    shared_endpoint_url()
    reports = []
    for index, name in enumerate(args.framework or FRAMEWORKS):
        copies = args.copies if args.copies is not None else MAKE_CHAOS_COPIES.get(name, 0)
        seconds = max(args.seconds, copies / MAX_RATE)  # a pace the local store keeps up with on 2 cores
        print(f"== {name} ({args.workers} workers, {seconds:g} s, {copies} copies or more)", flush=True)
        with lock_table(**SHORT_LEASE_SETTINGS) as settings, tempfile.TemporaryDirectory() as workdir:
            reports.append(
                run(
                    name,
                    settings,
                    Path(workdir),
                    seconds=seconds,
                    seed=args.seed * 10 + index,
                    workers=args.workers,
                    copies=copies,
                )
            )
    print(render(reports))
    failures = [f"{report.framework}: {failure}" for report in reports for failure in report.failures()]
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
