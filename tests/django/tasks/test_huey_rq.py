"""lock_task under huey and rq, run the way their workers run a task: task ids, retries, enqueue_unique, keys.

huey runs on a MemoryHuey in this process (dequeue, then ``execute``, as its consumer does); rq on the
test's redis-server with rq's ``SimpleWorker`` (the job in this process). The real consumers and
workers, SIGKILLed, are in the chaos run (test_task_chaos.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rq import Queue, SimpleWorker
from rq.decorators import job

from dynalock_django import AlreadyQueued
from dynalock_django.client import get_client
from dynalock_django.exceptions import ConfigurationError
from dynalock_django.signals import task_skipped
from dynalock_django.tasks import enqueue_unique, lock_task

from ...dynamodb_support import RequestCounter
from . import queue_jobs
from .workers import redis_server

pytestmark = pytest.mark.uses_dynalock


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    queue_jobs.seen.clear()
    queue_jobs.huey.flush()
    yield
    queue_jobs.huey.flush()


def run_huey_queue() -> int:
    """What huey's consumer does, until the queue is empty: how many tasks it executed."""
    executed = 0
    while (task := queue_jobs.huey.dequeue()) is not None:
        queue_jobs.huey.execute(task)
        executed += 1
    return executed


def test_huey_task_runs_locked_with_its_id_and_its_retry_counted_as_a_later_attempt():
    result = queue_jobs.huey_report(7, fail_first=True)
    assert run_huey_queue() == 2  # the first attempt failed, huey's retry ran
    first, retry = queue_jobs.seen
    assert first["run"].task_id == retry["run"].task_id == result.id
    assert (first["run"].attempt, retry["run"].attempt) == (0, 1)  # task.retries 2, then 1
    assert first["token"] is not None
    assert retry["token"] > first["token"]


def test_huey_enqueue_unique_refuses_a_second_queued_copy_until_a_consumer_starts_it():
    enqueue_unique(queue_jobs.huey_report, 8)
    with pytest.raises(AlreadyQueued):
        enqueue_unique(queue_jobs.huey_report, 8)
    enqueue_unique(queue_jobs.huey_report, 9)  # another key
    assert run_huey_queue() == 2
    enqueue_unique(queue_jobs.huey_report, 8)  # started: the marker is gone
    assert run_huey_queue() == 1


def test_huey_context_task_is_left_out_of_the_key_and_gives_the_run():
    locked = queue_jobs.huey_with_context.func.dynalock_task
    result = queue_jobs.huey_with_context(3)
    run_huey_queue()
    (entry,) = queue_jobs.seen
    assert entry["task_id"] == entry["run"].task_id == result.id
    assert locked.keys.run_key((), {"account": 3}, injected=False).endswith("(account=3,task=null)")


def test_a_queue_task_object_under_lock_task_is_refused():
    with pytest.raises(ConfigurationError, match="put @lock_task\\(\\) below @task"):
        lock_task()(queue_jobs.huey_report)


def test_rq_job_runs_locked_with_its_id_and_enqueue_unique_sees_its_enqueue():
    with redis_server() as url:
        import redis

        connection = redis.Redis.from_url(url)
        queue = Queue("dynalock-tests", connection=connection)
        delayed = job(queue, connection=connection)(queue_jobs.rq_report)  # rq's @job: the function itself, with .delay
        queued = enqueue_unique(delayed, 5)
        with pytest.raises(AlreadyQueued):
            enqueue_unique(delayed, 5)
        plain = queue.enqueue(queue_jobs.rq_report, 6)  # a bare enqueue runs locked too
        SimpleWorker([queue], connection=connection).work(burst=True)
        enqueue_unique(delayed, 5)  # started: the marker is gone
        connection.close()
    assert [(entry["account"], entry["run"].task_id, entry["run"].attempt) for entry in queue_jobs.seen] == [
        (5, queued.id, 0),
        (6, plain.id, 0),
    ]
    assert all(entry["token"] is not None for entry in queue_jobs.seen)


def test_each_run_of_an_rq_repeat_is_locked_and_one_meeting_a_live_holder_skips(other_holder):
    """rq's periodic jobs (``Repeat``, rq 2.2 and later; rq-scheduler is not installed here): every repeat is a run
    of the same job id at attempt 0, under the lock with a token of its own; while another process holds
    the key, the repeats skip visibly (``task_skipped`` names the job) and the chain of repeats goes on."""
    from rq import Repeat

    skipped: list[str | None] = []

    def on_skip(sender: str, *, task_id: str | None = None, **kwargs: object) -> None:
        skipped.append(task_id)

    task_skipped.connect(on_skip)
    key = queue_jobs.rq_repeated.dynalock_task.keys.run_key((8,), {}, injected=False)
    try:
        with redis_server() as url:
            import redis

            connection = redis.Redis.from_url(url)
            queue = Queue("dynalock-tests", connection=connection)
            repeated = queue.enqueue(queue_jobs.rq_repeated, 8, repeat=Repeat(times=2, interval=0))
            SimpleWorker([queue], connection=connection).work(burst=True)
            held = other_holder.acquire(key)  # another host's run, renewing its lease
            try:
                blocked = queue.enqueue(queue_jobs.rq_repeated, 8, repeat=Repeat(times=1, interval=0))
                SimpleWorker([queue], connection=connection).work(burst=True)
            finally:
                held.release()
            connection.close()
    finally:
        task_skipped.disconnect(on_skip)
    runs = [(entry["run"].task_id, entry["run"].attempt) for entry in queue_jobs.seen]
    assert runs == [(repeated.id, 0)] * 3  # the job and its two repeats, each run once, locked
    tokens = [entry["token"] for entry in queue_jobs.seen]
    assert None not in tokens
    assert tokens == sorted(set(tokens))  # each run took the key anew: its token above the last
    assert skipped == [blocked.id] * 2  # the job and its repeat met the live holder, and skipped


def test_cost_of_a_huey_run_and_of_a_unique_enqueue_in_requests():
    counted = RequestCounter(get_client().dynamodb)
    queue_jobs.huey_report(11)
    run_huey_queue()
    plain_run = dict(counted.calls)
    counted.reset()
    enqueue_unique(queue_jobs.huey_report, 12)
    enqueue = dict(counted.calls)
    counted.reset()
    run_huey_queue()
    unique_run = dict(counted.calls)
    print(f"\nrequests: run {plain_run}, enqueue_unique {enqueue}, its run {unique_run}")
    # A run: its key taken and released (a heartbeat only when it outlives a heartbeat period); the marker, read
    # and released as the run starts. One conditional write per enqueue_unique.
    assert sum(enqueue.values()) == 1
    assert sum(plain_run.values()) <= 4
    assert sum(unique_run.values()) <= sum(plain_run.values()) + 2
