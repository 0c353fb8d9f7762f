"""huey and rq tasks for test_huey_rq.py, each recording what ``lock_task`` saw of its run.

huey: a MemoryHuey, run in the test's process (``huey.execute(huey.dequeue())``, as its consumer does).
rq: plain functions a test's Queue enqueues (rq imports them by name), one behind ``@job``.
"""

from __future__ import annotations

from typing import Any

from huey import MemoryHuey
from huey.api import Task

from dynalock_django.tasks import current_token, frameworks, lock_task

huey = MemoryHuey("dynalock-tests", utc=True)
seen: list[dict[str, Any]] = []  # what each run saw, in the test's process


def note(**extra: Any) -> int | None:
    run = frameworks.current_run(())
    seen.append({"token": current_token(), "run": run, **extra})
    return current_token()


@huey.task(retries=2)
@lock_task(unique_while_queued=True, queued_lease=30)
def huey_report(account: int, fail_first: bool = False) -> int | None:
    if fail_first and not any(entry.get("account") == account for entry in seen):
        note(account=account)
        raise RuntimeError("the first attempt fails; huey retries it")
    return note(account=account)


@huey.task(context=True)
@lock_task()
def huey_with_context(account: int, task: Task | None = None) -> int | None:
    return note(account=account, task_id=task.id if task is not None else None)


@lock_task(unique_while_queued=True, queued_lease=30)
def rq_report(account: int) -> int | None:
    return note(account=account)


def repeated_key(account: int) -> str:
    return f"rq repeated {account}"


@lock_task(key=repeated_key)
def rq_repeated(account: int) -> int | None:
    """A job enqueued with rq's ``Repeat``: each repeat is a run of the same job id, attempt 0."""
    return note(account=account)
