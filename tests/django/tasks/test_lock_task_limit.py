"""@lock_task(limit=N): at most N runs of a task at once, every other copy run or skipped visibly."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.test import override_settings

from dynalock_django.client import get_client
from dynalock_django.dynamodb import MAX_COUNTED_NAME_BYTES, LockClient
from dynalock_django.exceptions import ConfigurationError, TaskLocked
from dynalock_django.signals import task_skipped
from dynalock_django.tasks import current_token, lock_task

from ...dynamodb_support import LEASE, PATIENCE, RequestCounter, make_dynamodb, short_lease_client, unique
from ..admin_support import PATIENT

pytestmark = pytest.mark.uses_dynalock


class Overlaps:
    """How many runs were inside the task at once, at most."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.tokens: list[int | None] = []

    def __enter__(self) -> Overlaps:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.tokens.append(current_token())
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self.lock:
            self.inside -= 1


def run_in_threads(function: Any, count: int) -> list[Any]:
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def call(index: int) -> None:
        try:
            results[index] = function(index)
        except BaseException as error:  # surfaced below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=call, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE * 4)
    assert not any(thread.is_alive() for thread in threads)
    if errors:
        raise errors[0]
    return results


def test_limit_2_runs_two_at_once_and_never_three():
    overlaps = Overlaps()
    both_in = threading.Barrier(2, timeout=PATIENCE)  # the first two runs meet: with limit=1 this times out

    @lock_task(unique("export"), on_conflict="wait", timeout=PATIENCE * 3, limit=2)
    def export(index: int) -> int:
        with overlaps:
            if index < 2:
                both_in.wait()
            threading.Event().wait(0.05)
        return index

    first_two = run_in_threads(export, 2)
    assert first_two == [0, 1]
    assert overlaps.most == 2
    results = run_in_threads(lambda index: export(index + 2), 6)
    assert results == [2, 3, 4, 5, 6, 7]  # every copy ran
    assert overlaps.most == 2
    assert len(overlaps.tokens) == 8
    assert None not in overlaps.tokens


def test_with_limit_2_the_copies_beyond_two_live_runs_skip_visibly():
    name = unique("export")
    overlaps = Overlaps()
    release = threading.Event()
    started = threading.Barrier(3, timeout=PATIENCE)  # two runs and the test

    @lock_task(name, limit=2)
    def export(index: int) -> int:
        with overlaps:
            if index < 2:
                started.wait()
                release.wait(PATIENCE)
        return index

    skipped: list[tuple[str, str, Any]] = []

    def receiver(sender: str, **kwargs: Any) -> None:
        skipped.append((sender, kwargs["task"], kwargs["holder"]))

    runs = [threading.Thread(target=export, args=(index,)) for index in range(2)]
    for run in runs:
        run.start()
    started.wait()
    task_skipped.connect(receiver)
    try:
        assert export(2) is None  # both permits held by live runs: skipped
    finally:
        task_skipped.disconnect(receiver)
        release.set()
        for run in runs:
            run.join(PATIENCE)
    assert overlaps.most == 2
    [(sender, task, holder)] = skipped
    assert sender == name
    assert task.endswith("export")
    assert holder is not None
    assert holder.fencing_token is not None
    assert export(3) == 3  # the runs ended: a permit is free


def test_raise_mode_with_a_limit_names_a_holder():
    name = unique("export")
    counted = get_client().semaphore(name, 2)
    held = [counted.acquire(timeout=PATIENCE), counted.acquire(timeout=PATIENCE)]

    @lock_task(name, on_conflict="raise", limit=2)
    def export() -> None: ...

    try:
        with pytest.raises(TaskLocked) as refused:
            export()
    finally:
        for lease in held:
            lease.release()
    assert refused.value.holder is not None


def test_limit_1_is_the_plain_key_as_without_it():
    name = unique("report")

    @lock_task(name, limit=1)
    def report() -> int | None:
        return current_token()

    token = report()
    assert get_client().get(name).fencing_token == token  # the task's own key, no permit items


@pytest.mark.parametrize("limit", [0, -2, True, 1.5, "2", None, 101])
def test_a_limit_that_is_not_a_whole_number_of_one_or_more_is_refused_when_decorating(limit):
    with pytest.raises(ConfigurationError, match=r"lock_task\(limit\)=.*whole number of 1 or more"):
        lock_task(limit=limit)(lambda: None)


def test_a_copy_skips_quickly_when_all_permits_are_held_by_renewing_runs(dynalock):
    name = unique("export")
    alive = LockClient(
        make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"], lease_duration=30, heartbeat_period=0.2
    )
    counted = alive.semaphore(name, 2)
    held = [counted.acquire(timeout=PATIENCE), counted.acquire(timeout=PATIENCE)]

    @lock_task(name, limit=2)
    def export() -> str:
        return "ran"

    try:
        started = time.monotonic()
        assert export() is None
        assert time.monotonic() - started < 30  # live runs are told by their heartbeats, not waited out
    finally:
        for lease in held:
            lease.release()
        alive.close()


def test_a_dead_runs_permit_is_taken_over_after_about_its_lease(dynalock):
    name = unique("export")
    dead = short_lease_client(make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"])
    counted = dead.semaphore(name, 2)
    held = {lease.permit: lease.fencing_token for lease in (counted.acquire(), counted.acquire())}
    dead.close(release=False)  # its heartbeat stops, as a killed worker's does

    @lock_task(name, limit=2)
    def export() -> int | None:
        return current_token()

    started = time.monotonic()
    token = export()
    assert time.monotonic() - started >= LEASE * 0.9  # a dead holder is waited out, never cut short
    [taken] = [permit for permit in held if get_client().get(f"{name}#permit-{permit}").fencing_token == token]
    assert token > held[taken]  # the permit's tokens grow across the takeover


def test_a_long_computed_key_leaves_room_for_its_permits_and_limit_1_keeps_its_key():
    @lock_task(limit=2)
    def export(payload: str) -> int | None:
        return current_token()

    payload = "é" * 3000
    key = export.dynalock_task.keys.run_key((payload,), {}, injected=False)
    assert len(key.encode()) <= MAX_COUNTED_NAME_BYTES
    assert export(payload) is not None  # its permits' keys fit DynamoDB's
    single = lock_task()(export.__wrapped__)
    assert len(single.dynalock_task.keys.run_key((payload,), {}, injected=False).encode()) > MAX_COUNTED_NAME_BYTES


class Deploys:
    """Runs of one key under several ``limit``s (old and new workers side by side): who was inside at once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.inside: list[int] = []  # the limit of each run inside now
        self.violations: list[list[int]] = []
        self.ran: list[int] = []

    def task(self, limit: int, *, hold: threading.Event | None = None, **options: Any) -> Any:
        """The task as a deploy with ``limit`` decorates it; ``hold``: its runs stay inside until it is set."""

        @lock_task(self.name, limit=limit, **options)
        def job() -> int:
            with self.lock:
                self.inside.append(limit)
                # Never more runs than the smallest limit among them, and a limit=1 run alone.
                if len(self.inside) > min(self.inside):
                    self.violations.append(list(self.inside))
                self.ran.append(limit)
            try:
                if hold is not None:
                    hold.wait(PATIENCE)
            finally:
                with self.lock:
                    self.inside.remove(limit)
            return limit

        return job

    def start(self, task: Any, count: int) -> list[threading.Thread]:
        """``count`` runs of ``task`` in threads, returned once each is inside."""
        before = len(self.ran)
        threads = [threading.Thread(target=task) for _ in range(count)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + PATIENCE
        while len(self.ran) < before + count and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(self.ran) == before + count
        return threads


@pytest.mark.parametrize(("old_limit", "new_limit"), [(2, 3), (3, 2), (2, 1), (1, 2)])
def test_a_new_limit_is_refused_while_the_old_limits_runs_hold_and_runs_once_they_end(old_limit, new_limit):
    deploys = Deploys(unique("export"))
    hold = threading.Event()
    old_runs = deploys.start(deploys.task(old_limit, hold=hold), old_limit)
    new_skip = deploys.task(new_limit)
    new_raise = deploys.task(new_limit, on_conflict="raise")
    skipped: list[Any] = []

    def receiver(sender: str, **kwargs: Any) -> None:
        skipped.append(kwargs["holder"])

    task_skipped.connect(receiver)
    try:
        assert new_skip() is None  # skipped visibly, naming a run of the old limit
        with pytest.raises(TaskLocked, match="held by a live run") as refused:
            new_raise()
    finally:
        task_skipped.disconnect(receiver)
        hold.set()
        for thread in old_runs:
            thread.join(PATIENCE)
    assert len(skipped) == 1
    assert skipped[0] is not None
    assert refused.value.holder is not None
    assert new_skip() == new_limit  # the old runs ended: the new limit takes over
    hold_new = threading.Event()
    new_runs = deploys.start(deploys.task(new_limit, hold=hold_new), new_limit)  # all of its limit at once
    assert deploys.task(old_limit)() is None  # and now the old limit is the one kept out
    hold_new.set()
    for thread in new_runs:
        thread.join(PATIENCE)
    assert deploys.violations == []


@pytest.mark.parametrize(("old_limit", "new_limit"), [(2, 1), (1, 2)])
def test_a_waiting_run_of_the_new_limit_starts_after_the_old_runs_end_never_beside_them(old_limit, new_limit):
    deploys = Deploys(unique("export"))
    hold = threading.Event()
    old_runs = deploys.start(deploys.task(old_limit, hold=hold), old_limit)
    waiting = deploys.task(new_limit, on_conflict="wait", timeout=PATIENCE * 2)
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(waiting()))
    thread.start()
    time.sleep(0.3)  # it waits (its polls find the old limit held)
    assert result == []
    hold.set()
    for run in old_runs:
        run.join(PATIENCE)
    thread.join(PATIENCE * 2)
    assert result == [new_limit]
    assert deploys.violations == []
    assert deploys.ran == [old_limit] * old_limit + [new_limit]


@pytest.mark.parametrize(("limit", "first", "then"), [(1, 2, 2), (3, 4, 3)])
def test_requests_per_run_a_deploy_change_adds_nothing_to_a_steady_limit(dynalock, limit, first, then):
    """limit=1: grant and release; limit=N: one read of the set (and the key), the grant, the release. The
    first permit run marks the key once (so a limit=1 run of a later deploy looks at the permits)."""
    with override_settings(DYNALOCK={**dynalock, **PATIENT}):  # no heartbeat within a run, however slow
        requests = RequestCounter(get_client().dynamodb)
        counts = runs_of(limit, requests)
    assert counts == [first, then, then]


def runs_of(limit: int, requests: RequestCounter) -> list[int]:

    @lock_task(unique("export"), limit=limit)
    def export() -> str:
        return "ran"

    counts = []
    for _ in range(3):
        requests.reset()
        assert export() == "ran"
        counts.append(requests.total)
    return counts
