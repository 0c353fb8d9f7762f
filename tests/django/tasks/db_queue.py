"""The chaos run's hand on django-tasks-db's queue: ``python -m tests.django.tasks.db_queue``.

Run with db_worker_settings.

It reads one JSON command a line and answers each with one line:
``{"enqueue": [name, seconds], "probe": false}`` puts a ``django_chaos`` copy in the queue (``django_chaos_pair``
for a name of ``task_history.LIMITS``);
``{"requeue": worker_id}`` does what an operator must do after a ``db_worker`` was killed (django-tasks-db
never runs a task again by itself): it enqueues a new copy of each task that worker was running,
and marks the old row failed. Each enqueue is recorded as an ``enqueued`` event (tests/chaos/history.py).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import django

django.setup()

from django_tasks_db.models import DBTaskResult  # noqa: E402  (after django.setup())

from ...chaos.history import Recorder  # noqa: E402
from .chaos_jobs import django_chaos, django_chaos_pair  # noqa: E402
from .environment import EVENTS  # noqa: E402
from .task_history import LIMITS  # noqa: E402

RUNNING = "RUNNING"


def main() -> None:
    events = Recorder(Path(os.environ[EVENTS]), "queue")
    for line in sys.stdin:
        command = json.loads(line)
        if "enqueue" in command:
            name, seconds = command["enqueue"]
            result = (django_chaos_pair if name in LIMITS else django_chaos).enqueue(name, seconds)
            events("enqueued", name, id=str(result.id), probe=bool(command.get("probe")))
            answer: object = str(result.id)
        else:
            worker_id = command["requeue"]
            answer = []
            for row in DBTaskResult.objects.filter(status=RUNNING):
                if row.worker_ids and row.worker_ids[-1] == worker_id:
                    args = row.args_kwargs["args"]
                    chaos_task = django_chaos_pair if args[0] in LIMITS else django_chaos
                    result = chaos_task.enqueue(*args, **row.args_kwargs["kwargs"])
                    DBTaskResult.objects.filter(id=row.id).update(status="FAILED")
                    events("enqueued", args[0], id=str(result.id), replaces=str(row.id))
                    answer.append(str(result.id))
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
