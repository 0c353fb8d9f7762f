"""The suite's settings plus django-q2 on its ORM broker, for the ``qcluster`` processes of the task tests.

Only those processes (and the chaos run's queue process, django_q_queue.py) use them; the database is
the file named by ``DYNALOCK_TEST_DATABASE``, shared by every cluster (``DYNALOCK_TEST_SQLITE_SHARED``).
"""

import os

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_q"]
Q_CLUSTER = {
    "name": "dynalock",
    "orm": "default",  # the ORM broker: the queue is a table of the shared database
    "workers": 6,
    "queue_limit": 6,  # a cluster takes no more than its workers can start: fewer copies die with it
    "bulk": 1,
    "poll": 0.05,
    # An unacknowledged copy (its cluster killed, or still running) is handed out again after ``retry``
    # seconds, so a long copy runs past it and is handed out while it runs, as a user's may be. No
    # ``timeout`` (django-q2 warns: a timeout would end the long copies, this run lets them be handed out again).
    "retry": 4,
    "max_attempts": 3,  # a failed copy is run again until its third attempt
    "ack_failures": False,
    "catch_up": False,
    "save_limit": 0,
    "recycle": 10_000,
    "log_level": "WARNING",  # not a line per enqueue and per copy
}
# Three clusters poll the queue's table every 0.05 s while the test's queue process writes to it: in SQLite's WAL
# mode their reads wait for no writer, and a commit does not wait for the disk (synchronous=NORMAL: a power cut,
# not a SIGKILL, could lose the last commits).
WAL = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = WAL  # noqa: F405
if os.environ.get("DYNALOCK_TEST_DJANGO_Q_SYNC"):
    # django_q_schedule.py: a due Schedule's copy runs in the scheduler's process, through django-q2's own worker
    # code (its pre_execute signal, its Task row), instead of on a cluster.
    Q_CLUSTER["sync"] = True
