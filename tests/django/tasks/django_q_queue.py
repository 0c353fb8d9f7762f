"""The chaos run's hand on django-q2's ORM queue: ``python -m tests.django.tasks.django_q_queue``.

Run with django_q_settings. It reads one JSON command a line, ``{"enqueue": [name, seconds, flaky],
"probe": false}``, puts a ``q_chaos`` copy in the queue (``q_chaos_pair`` for a name of
``task_history.LIMITS``) with ``async_task``, records it as an ``enqueued`` event and answers with its id.
Nothing to do after a killed cluster: django-q2 hands its copies out again once ``retry`` has passed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import django

django.setup()

from django_q.tasks import async_task  # noqa: E402  (after django.setup())

from ...chaos.history import Recorder  # noqa: E402
from .environment import EVENTS  # noqa: E402
from .task_history import LIMITS  # noqa: E402

JOBS = "tests.django.tasks.django_q_jobs"


def main() -> None:
    events = Recorder(Path(os.environ[EVENTS]), "queue")
    for line in sys.stdin:
        command = json.loads(line)
        name, seconds, flaky = command["enqueue"]
        function = f"{JOBS}.q_chaos_pair" if name in LIMITS else f"{JOBS}.q_chaos"
        task_id = str(async_task(function, name, seconds, flaky))
        events("enqueued", name, id=task_id, probe=bool(command.get("probe")))
        print(json.dumps(task_id), flush=True)


if __name__ == "__main__":
    main()
