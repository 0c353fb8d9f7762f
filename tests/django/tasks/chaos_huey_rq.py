"""The task chaos run's huey and rq (chaos.py runs them as it runs Celery's and django-tasks-db's).

A huey worker is a consumer of six thread workers, an rq worker a ``worker-pool`` of five ``SimpleWorker``
processes (the pool starts another for one that dies): with one slot a worker, a copy that waits for a
killed holder's lease kept its whole worker from the queue, and 200 copies took 70 to 115 s to end. Every
kill is the whole worker's (the session). Neither queue hands a killed worker's task out
again: the task left Redis when it was dequeued (huey), or waits in rq's StartedJobRegistry until a
cleanup fails it. So the driver does what their operator must: after a kill it enqueues a new copy
(``replaces``) of every copy that worker had begun and not finished.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from ...chaos.history import Recorder, load
from .chaos_workers import Framework
from .environment import BROKER
from .task_history import LIMITS


class QueueFramework(Framework):
    """What huey and rq share: the copies enqueued (to enqueue a lost one again), and the re-enqueue itself."""

    name: str
    retries = False  # huey and rq retry only what a task asks for: no copy's first attempt fails on purpose
    whole_workers = True  # every kill is the whole worker's: the consumer, or the pool and its processes

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

    def close(self) -> None:
        """Nothing: the Redis is the run's, stopped after it."""


class HueyFramework(QueueFramework):
    name = "huey"
    warm_imports = ("huey.bin.huey_consumer", "tests.django.tasks.queue_chaos_jobs")

    def __init__(self, env: dict[str, str], broker: str, workdir: Path, driver: Recorder, events: Path) -> None:
        super().__init__(env, broker, workdir, driver, events)
        from huey import RedisHuey

        from . import queue_chaos_jobs as jobs

        self.huey = RedisHuey(jobs.HUEY_NAME, url=broker, results=False, utc=True)
        self.tasks = {"plain": jobs.huey_chaos, "pair": jobs.huey_chaos_pair}
        for wrapper in self.tasks.values():
            self.huey._registry.register(wrapper.task_class)

    def worker_command(self, ident: str) -> list[str]:
        command = ["-m", "huey.bin.huey_consumer", "tests.django.tasks.queue_chaos_jobs.huey"]
        command += ["-w", "6", "-k", "thread", "-d", "0.05", "-m", "0.1"]
        return [*command, "-C", "-n", "-q"]  # no -f: a killed consumer's keys are free after their lease, not a flush

    def send(self, task_id: str, name: str, seconds: float) -> None:
        wrapper = self.tasks["pair" if name in LIMITS else "plain"]
        self.huey.enqueue(wrapper.s(name, seconds, id=task_id))

    def queue_state(self) -> str:
        return f"{self.huey.pending_count()} queued"

    def close(self) -> None:
        self.huey.storage.conn.close()


class RqFramework(QueueFramework):
    name = "rq"
    warm_imports = ("rq.cli", "tests.django.tasks.queue_chaos_jobs")

    def __init__(self, env: dict[str, str], broker: str, workdir: Path, driver: Recorder, events: Path) -> None:
        super().__init__(env, broker, workdir, driver, events)
        import redis
        from rq import Queue, Retry

        from . import queue_chaos_jobs as jobs

        self.connection = redis.Redis.from_url(broker)
        self.queue = Queue("dynalock-chaos", connection=self.connection)
        self.functions = {"plain": jobs.rq_chaos, "pair": jobs.rq_chaos_pair}
        self.retry = Retry(max=jobs.RETRIES, interval=jobs.RETRY_DELAY)  # as huey's: a copy the store failed, again

    def worker_command(self, ident: str) -> list[str]:
        command = ["-m", "rq.cli", "worker-pool", "dynalock-chaos", "--url", self.broker, "-q", "-n", "5"]
        return [*command, "-w", "tests.django.tasks.queue_chaos_jobs.RecordingWorker"]

    def send(self, task_id: str, name: str, seconds: float) -> None:
        function = self.functions["pair" if name in LIMITS else "plain"]
        self.queue.enqueue(function, name, seconds, job_id=task_id, result_ttl=0, retry=self.retry)

    def queue_state(self) -> str:
        return f"{len(self.queue)} queued, {len(self.queue.started_job_registry)} started"

    def close(self) -> None:
        self.connection.close()


QUEUES: dict[str, type[QueueFramework]] = {"huey": HueyFramework, "rq": RqFramework}
