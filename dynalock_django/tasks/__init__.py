"""Run-once tasks: one run at a time per key, for plain functions, Django's Tasks and Celery.

    from django.tasks import task          # Django 6 (django_tasks on 5.2); or Celery's @app.task
    from dynalock_django.tasks import current_token, lock_task

    @task
    @lock_task(on_conflict="skip")
    def nightly_invoices(account_id): ...

Neither Celery nor django-tasks is imported here: both are optional. See docs/django/tasks.md.
"""

from .locked_task import current_token, lock_task
from .unique_enqueue import enqueue_unique

__all__ = ["current_token", "enqueue_unique", "lock_task"]
