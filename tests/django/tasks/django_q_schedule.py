"""A django-q2 ``Schedule`` through ``@lock_task``: ``python -m tests.django.tasks.django_q_schedule``.

Run with django_q_settings and ``DYNALOCK_TEST_DJANGO_Q_SYNC=1`` (test_django_q_schedule.py): django-q2's
own scheduler turns a due ``Schedule`` into a copy (``async_task``), which runs here through django-q2's
worker code (sync). Twice: once with the key free, once while another client holds it (and renews it).
Each copy's events (django_q_jobs: ``scheduled`` with the copy's id as the lock read it, ``skip`` from
``task_skipped``) go to ``DYNALOCK_TEST_EVENTS``; it prints the copies' ids django-q2 gave them, a JSON list.
"""

from __future__ import annotations

import json
from datetime import timedelta

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402
from django_q.brokers import get_broker  # noqa: E402
from django_q.models import Schedule  # noqa: E402
from django_q.scheduler import scheduler  # noqa: E402

from ...dynamodb_support import make_dynamodb, short_lease_client  # noqa: E402
from .django_q_jobs import scheduled_key  # noqa: E402

ACCOUNT = 9


def main() -> None:
    call_command("migrate", verbosity=0, skip_checks=True)
    schedule = Schedule.objects.create(
        func="tests.django.tasks.django_q_jobs.q_scheduled",
        args=str(ACCOUNT),
        schedule_type=Schedule.MINUTES,
        minutes=1,
        repeats=-1,
        next_run=timezone.now() - timedelta(seconds=1),
    )
    broker = get_broker()
    scheduler(broker=broker)  # due: a copy, run at once
    copies = [Schedule.objects.get(pk=schedule.pk).task]
    Schedule.objects.filter(pk=schedule.pk).update(next_run=timezone.now() - timedelta(seconds=1))
    other = short_lease_client(make_dynamodb(settings.DYNALOCK["ENDPOINT_URL"]), settings.DYNALOCK["TABLE_NAME"])
    try:
        with other.lock(scheduled_key(ACCOUNT)):  # another host's run holds the key, renewing it
            scheduler(broker=broker)
    finally:
        other.close(release=False)
    copies.append(Schedule.objects.get(pk=schedule.pk).task)
    print(json.dumps(copies))


if __name__ == "__main__":
    main()
