"""The task queues ``lock_task`` and ``enqueue_unique`` know: one adapter module each, listed in ``ADAPTERS``.

No adapter imports its framework (each is optional): see :mod:`.base`. Adding a
queue is one module with the functions of :class:`.base.QueueAdapter` and one
line in ``ADAPTERS``. Where two adapters could claim one task object, the first
listed wins, so put the one that checks most narrowly first.
"""

from __future__ import annotations

from . import celery_queue, django_q_queue, django_queue, dramatiq_queue, huey_queue, rq_queue
from .base import QueueAdapter as QueueAdapter

ADAPTERS: tuple[QueueAdapter, ...] = (
    django_queue,
    dramatiq_queue,
    celery_queue,
    huey_queue,
    rq_queue,
    django_q_queue,
)
