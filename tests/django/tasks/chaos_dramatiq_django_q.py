"""The task chaos run's frameworks beyond Celery and Django's Tasks: dramatiq and django-q2 (see chaos.py).

dramatiq runs on the test's redis-server: ``python -m dramatiq tests.django.tasks.dramatiq_app``, one
process of six threads a worker (a copy that skips holds its thread while it watches the holder, and
one behind a killed holder for up to a lease: with fewer, the copies end after the storm, not under
its kills). A SIGKILLed worker's messages (running and prefetched) stay in its Redis acknowledgement
set until its heartbeat is older than ``dramatiq_app.HEARTBEAT_MS``; then another worker hands them
out again. django-q2 runs on its ORM broker, a table of a SQLite file every cluster shares
(``manage.py qcluster``, six workers a cluster: with two, 200 copies took a minute and more to end). A
killed cluster's copies (running and taken into its local queue) are handed out again once
``Q_CLUSTER["retry"]`` seconds have passed since they were taken, as are long copies still running.
Both retry a failed copy themselves (dramatiq's ``retries`` option, django-q2's attempt count): the
flaky copies' first attempts fail.

A dramatiq worker's task runs in a child process of the worker; a django-q2 cluster's in one of its
pool's processes. Either supervisor reacts to a lost child (dramatiq stops the whole worker, django-q2
starts another), so the chaos SIGKILLs whole workers, each a process group.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ...dynamodb_support import PATIENCE
from .chaos import DatabaseQueueFramework
from .chaos_workers import Framework
from .environment import BROKER
from .task_history import LIMITS


class DramatiqFramework(Framework):
    name = "dramatiq"
    retries = True
    whole_workers = True
    # Not dramatiq_app: dramatiq's main imports the broker's module in its forked worker process, not before.
    warm_imports = ("dramatiq.cli", "dramatiq.brokers.redis", "tests.django.tasks.chaos_jobs")

    def __init__(self, env: dict[str, str], broker: str, workdir: Path, driver: Any, threads: int = 6) -> None:
        import dramatiq

        from .dramatiq_app import make_broker

        self.env = {**env, BROKER: broker}
        self.workdir = workdir
        self.driver = driver
        self.threads = threads
        self.message_class = dramatiq.Message
        self.sender = make_broker(broker)
        self.sender.declare_queue("default")

    def worker_command(self, ident: str) -> list[str]:
        command = ["-m", "dramatiq", "tests.django.tasks.dramatiq_app", "--processes", "1"]
        return [*command, "--threads", str(self.threads)]

    def enqueue(self, name: str, seconds: float, flaky: bool, probe: bool, actor: str = "") -> None:
        actor = actor or ("dramatiq_chaos_pair" if name in LIMITS else "dramatiq_chaos")
        message = self.message_class(
            queue_name="default", actor_name=actor, args=(name, seconds, flaky), kwargs={}, options={}
        )
        self.driver("enqueued", name, id=message.message_id, probe=probe)
        self.sender.enqueue(message)

    def queue_state(self) -> str:
        client = self.sender.client
        queued, delayed = client.llen("dramatiq:default"), client.llen("dramatiq:default.DQ")
        unacked = sum(client.scard(key) for key in client.scan_iter("dramatiq:__acks__.*"))
        return f"{queued} queued, {delayed} delayed, {unacked} taken by workers (dead ones' too)"

    def close(self) -> None:
        self.sender.close()


class DjangoQFramework(DatabaseQueueFramework):
    name = "django_q"
    retries = True
    whole_workers = True
    settings_module = "tests.django.tasks.django_q_settings"
    queue_module = "tests.django.tasks.django_q_queue"
    database = "queue.sqlite3"
    extra_env = {"DYNALOCK_TEST_SQLITE_SHARED": "1"}
    warm_imports = ("django_q.cluster", "tests.django.tasks.chaos_jobs")

    def worker_command(self, ident: str) -> list[str]:
        return ["manage.py", "qcluster"]

    def enqueue(self, name: str, seconds: float, flaky: bool, probe: bool) -> None:
        assert self.queue.stdin is not None
        assert self.queue.stdout is not None
        self.queue.stdin.write(json.dumps({"enqueue": [name, seconds, flaky], "probe": probe}) + "\n")
        self.queue.stdin.flush()
        assert self.queue.stdout.readline(), f"the queue process ended (exit {self.queue.poll()})"

    def close(self) -> None:
        try:
            self.queue.communicate(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            self.queue.kill()
            self.queue.communicate()
