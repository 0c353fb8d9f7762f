"""The suite's settings plus django-tasks-db, for the ``db_worker`` processes of test_db_worker.py.

Only those processes use them (django-tasks-db patches Django's generics on import, which the suite's
own settings never do); the database is the file named by ``DYNALOCK_TEST_DATABASE``.
"""

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks_db"]
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
