"""The task chaos run's huey and rq (chaos.py runs them as it runs Celery's and django-tasks-db's).

Each worker is one process running one task at a time (huey's consumer with one thread worker, rq's
``SimpleWorker``), so every kill is the whole worker's. Neither queue hands a killed worker's task out
again: the task left Redis when it was dequeued (huey), or waits in rq's StartedJobRegistry until a
cleanup fails it. So the driver does what their operator must: after a kill it enqueues a new copy
(``replaces``) of every copy that worker had begun and not finished.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from ...chaos.history import Recorder, load
from .environment import BROKER
from .task_history import LIMITS


class QueueFramework:
    """What huey and rq share: the copies enqueued (to enqueue a lost one again), and the re-enqueue itself."""

    name: str
    retries = False  # huey and rq retry only what a task asks for: no copy's first attempt fails on purpose
    whole_workers = True  # one process a worker: every kill is the whole worker's

    def __init__(self, env: dict[str, str], broker: str, workdir: Path, driver: Recorder, events: Path) -> None:
        self.env = {**env, BROKER: broker}
        self.broker = broker
        self.workdir = workdir
        self.driver = driver
        self.events = events
        self.copies: dict[str, tuple[str, float]] = {}

    def enqueue(self, name: str, seconds: float, flaky: bool, probe: bool, replaces: str | None = None) -> None:
        task_id = uuid.uuid4().hex
        self.copies[task_id] = (name, seconds)
        extra: dict[str, Any] = {"replaces": replaces} if replaces else {}
        self.driver("enqueued", name, id=task_id, probe=probe, **extra)  # before: a quick worker may record it first
        self.send(task_id, name, seconds)

    def send(self, task_id: str, name: str, seconds: float) -> None:
        raise NotImplementedError

    def after_worker_killed(self, worker: Any) -> None:
        """Enqueue again each copy the dead worker had begun and not finished (as its operator must)."""
        events = load(self.events)
        pids = {pid for e in events if e.kind == "kill" for pid in e.data["pids"]}
        done = {e.data["id"] for e in events if e.kind in ("end", "skip") and e.data.get("id")}
        replaced = {e.data["replaces"] for e in events if e.kind == "enqueued" and e.data.get("replaces")}
        probes = {e.data["id"] for e in events if e.kind == "enqueued" and e.data.get("probe")}
        lost = {
            e.data["id"]
            for e in events
            if e.kind == "begin" and e.data.get("pid") in pids and e.data["id"] not in done | replaced | probes
        }
        for task_id in sorted(lost):
            name, seconds = self.copies[task_id]
            self.enqueue(name, seconds, flaky=False, probe=False, replaces=task_id)

    def queue_state(self) -> str:
        return ""

    def close(self) -> None:
        """Nothing: the Redis is the run's, stopped after it."""


class HueyFramework(QueueFramework):
    name = "huey"

    def __init__(self, env: dict[str, str], broker: str, workdir: Path, driver: Recorder, events: Path) -> None:
        super().__init__(env, broker, workdir, driver, events)
        from huey import RedisHuey

        from . import queue_chaos_jobs as jobs

        self.huey = RedisHuey(jobs.HUEY_NAME, url=broker, results=False, utc=True)
        self.tasks = {"plain": jobs.huey_chaos, "pair": jobs.huey_chaos_pair}
        for wrapper in self.tasks.values():
            self.huey._registry.register(wrapper.task_class)

    def start_worker(self, ident: str) -> Any:
        from .chaos import PYTHON, Worker, _popen

        command = [PYTHON, "-c", "from huey.bin.huey_consumer import consumer_main; consumer_main()"]
        command += ["tests.django.tasks.queue_chaos_jobs.huey", "-w", "1", "-k", "thread", "-d", "0.05", "-m", "0.1"]
        command += ["-C", "-n", "-q"]  # no -f: a killed consumer's keys are free after their lease, not a flush
        return Worker(ident, _popen(command, self.env, self.workdir / f"{ident}.log"))

    def send(self, task_id: str, name: str, seconds: float) -> None:
        wrapper = self.tasks["pair" if name in LIMITS else "plain"]
        self.huey.enqueue(wrapper.s(name, seconds, id=task_id))

    def queue_state(self) -> str:
        return f"{self.huey.pending_count()} queued"

    def close(self) -> None:
        self.huey.storage.conn.close()


class RqFramework(QueueFramework):
    name = "rq"

    def __init__(self, env: dict[str, str], broker: str, workdir: Path, driver: Recorder, events: Path) -> None:
        super().__init__(env, broker, workdir, driver, events)
        import redis
        from rq import Queue

        from . import queue_chaos_jobs as jobs

        self.connection = redis.Redis.from_url(broker)
        self.queue = Queue("dynalock-chaos", connection=self.connection)
        self.functions = {"plain": jobs.rq_chaos, "pair": jobs.rq_chaos_pair}

    def start_worker(self, ident: str) -> Any:
        from .chaos import PYTHON, Worker, _popen

        command = [PYTHON, "-m", "rq.cli", "worker", "dynalock-chaos", "--url", self.broker, "-q"]
        command += ["-w", "tests.django.tasks.queue_chaos_jobs.RecordingWorker"]
        command += ["-n", f"{ident}-{uuid.uuid4().hex[:6]}"]  # a restarted worker gets a name of its own
        return Worker(ident, _popen(command, self.env, self.workdir / f"{ident}.log"))

    def send(self, task_id: str, name: str, seconds: float) -> None:
        function = self.functions["pair" if name in LIMITS else "plain"]
        self.queue.enqueue(function, name, seconds, job_id=task_id, result_ttl=0)

    def queue_state(self) -> str:
        return f"{len(self.queue)} queued, {len(self.queue.started_job_registry)} started"

    def close(self) -> None:
        self.connection.close()


QUEUES: dict[str, type[QueueFramework]] = {"huey": HueyFramework, "rq": RqFramework}
