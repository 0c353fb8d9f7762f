"""``lock_task``: a task's function runs only while it holds its key's lease; one run at a time per key.

With ``limit=N`` the key is a semaphore's: at most N runs at once, each holding one permit (its own lease and
fencing token). ``limit=1`` is the plain key, exactly as without it. A deploy may change ``limit``: runs of the
other limit still holding the key are met as live runs are, and the new limit takes over once none of them
holds (docs/django/tasks.md, "Changing limit").

The lease is heartbeated by the process's client for as long as the function
runs, so there is no time-to-live to guess: a long run keeps it, a killed
worker's stops being renewed and is taken over once its lease has passed.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any, Literal, TypeVar, cast

from .. import keys, signals
from ..client import get_client
from ..counted_locks import check_permits
from ..counters import task_skipped
from ..dynamodb import Lease, LockClient, LockInfo, printable
from ..exceptions import ConfigurationError, CountInUse, InvalidLockRequest, LockTimeout, TaskLocked
from ..payload import LockData
from . import frameworks
from .holder_watch import acquire_permit_unless_alive, acquire_unless_alive
from .min_hold import check_min_hold, hold_until
from .queue_markers import release_queued_marker
from .task_keys import KeySpec, TaskKeys

logger = logging.getLogger("dynalock_django.tasks")

F = TypeVar("F", bound=Callable[..., Any])
OnConflict = Literal["skip", "raise", "wait", "retry"]
ON_CONFLICT = ("skip", "raise", "wait", "retry")

_token: contextvars.ContextVar[int | None] = contextvars.ContextVar("dynalock_task_token", default=None)


def current_token() -> int | None:
    """The fencing token of the ``lock_task`` run in progress; None outside one."""
    return _token.get()


class LockedTask:
    """What ``lock_task`` was given for one function, and how a call of it runs."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        key: KeySpec,
        on_conflict: OnConflict,
        timeout: float | None,
        lease_duration: float | None,
        unique_while_queued: bool,
        queued_lease: float | None,
        limit: int = 1,
        min_hold: float | None = None,
    ) -> None:
        self.function = function
        self.keys = TaskKeys(function, key, counted=limit > 1)
        self.name = self.keys.name
        self.on_conflict = on_conflict
        self.timeout = timeout
        self.lease_duration = lease_duration
        self.unique_while_queued = unique_while_queued
        self.queued_lease = queued_lease
        self.limit = limit
        self.min_hold = min_hold

    def __repr__(self) -> str:
        limit = f" limit={self.limit}" if self.limit > 1 else ""
        return f"<LockedTask {self.name} on_conflict={self.on_conflict!r}{limit}>"

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the function holding its key's lease; None (skip) or TaskLocked when a live run holds it."""
        injected = bool(args) and frameworks.is_injected(args[0])
        own_kwargs = frameworks.key_kwargs(kwargs)  # without what the framework passed by keyword (huey's task=)
        key = self.keys.run_key(args, own_kwargs, injected=injected)
        run = frameworks.current_run(args, kwargs)
        if self.unique_while_queued:
            # This copy left the queue: the next enqueue may put another in.
            release_queued_marker(self.keys.queued_key(args, own_kwargs, injected=injected), task=self.name)
        taken = self._take(key, run)
        if not isinstance(taken, Lease):
            return self._conflict(key, taken, run)
        started = get_client().clock.monotonic()  # min_hold counts from the grant (a wait for the key is not the run)
        with taken:
            # The same signals as every other lock of the Django layer: audit and metrics see task runs too.
            signals.watch(taken)
            signals.lease_acquired.send(sender=taken.key, lease=taken)
            reset = _token.set(taken.fencing_token)
            try:
                return self.function(*args, **kwargs)
            finally:
                _token.reset(reset)
                # Failed or not, the run happened: a copy of its slot must not run it again.
                hold_until(get_client(), taken, started=started, min_hold=self.min_hold)

    def _take(self, key: str, run: frameworks.TaskRun | None) -> Lease | LockInfo | None:
        """The run's lease; else the holder in the way (None if unread): a live run, or one of another ``limit``.

        Runs of another ``limit`` (a deploy changed it; old and new workers side by side) hold the key's
        permits or its plain lock: they are met as a live run is (skip, raise, or wait until ``timeout``).
        """
        client = get_client()
        extra: dict[str, Any] = {"task": self.name}
        if run is not None:
            extra.update(task_id=run.task_id, attempt=run.attempt)
        data = LockData(purpose="task", extra=extra).to_bytes()
        waits_until = None if self.timeout is None else client.clock.monotonic() + self.timeout
        while True:
            try:
                return self._take_once(client, key, data, run, waits_until)
            except CountInUse as other_limit:
                now = client.clock.monotonic()
                if self.on_conflict != "wait" or waits_until is None or now >= waits_until:
                    if self.on_conflict == "wait":
                        raise TaskLocked(
                            f"Task {self.name} waited {self.timeout}s for {key!r}: runs of another limit still "
                            f"hold it ({_who(other_limit.holder)}).",
                            other_limit.holder,
                        ) from other_limit
                    return other_limit.holder
                client.clock.wait(threading.Event(), min(client.refresh_period, waits_until - now))

    def _take_once(
        self, client: LockClient, key: str, data: bytes, run: frameworks.TaskRun | None, waits_until: float | None
    ) -> Lease | LockInfo | None:
        if self.limit > 1:
            return self._take_permit(client, key, data, run, waits_until)
        if self.on_conflict == "wait":
            assert waits_until is not None  # a wait has a timeout (checked by lock_task)
            try:
                taken: Lease | LockInfo | None = client.acquire(
                    key,
                    timeout=max(0.0, waits_until - client.clock.monotonic()),
                    data=data,
                    lease_duration=self.lease_duration,
                    described=keys.described(key, "task"),
                )
            except LockTimeout as error:
                raise TaskLocked(
                    f"Task {self.name} waited {self.timeout}s for {key!r}: another run still holds it.", error.holder
                ) from error
        else:
            taken = acquire_unless_alive(
                client,
                key,
                described=keys.described(key, "task"),
                data=data,
                lease_duration=self.lease_duration,
                waits_for=functools.partial(_is_earlier_attempt, run),
            )
        if isinstance(taken, Lease):
            client.exclude_permits(taken)  # runs of a limit=N deploy may hold the key's permits: CountInUse
        return taken

    def _take_permit(
        self,
        client: LockClient,
        key: str,
        data: bytes,
        run: frameworks.TaskRun | None,
        waits_until: float | None,
    ) -> Lease | LockInfo | None:
        """One of the ``limit`` permits of the task's key; else a live holder in the way, as :meth:`_take`.

        The key's plain lock is a run of ``limit=1`` (``name_lock``): while it is held, CountInUse.
        """
        counted = client.semaphore(key, self.limit, name_lock=True, described=keys.described(key, "task"))
        if self.on_conflict == "wait":
            assert waits_until is not None
            try:
                return counted.acquire(
                    timeout=max(0.0, waits_until - client.clock.monotonic()),
                    data=data,
                    lease_duration=self.lease_duration,
                )
            except LockTimeout as error:
                raise TaskLocked(
                    f"Task {self.name} waited {self.timeout}s for a permit of {key!r}: {self.limit} runs still "
                    "hold them all.",
                    error.holder,
                ) from error
        return acquire_permit_unless_alive(
            client,
            counted,
            data=data,
            lease_duration=self.lease_duration,
            waits_for=functools.partial(_is_earlier_attempt, run),
        )

    def _conflict(self, key: str, holder: LockInfo | None, run: frameworks.TaskRun | None) -> None:
        if self.on_conflict == "retry":
            # Back in the queue once the holder's lease would have run out: a live holder renews it (the
            # copy comes back and looks again), a dead one's is taken over then. Never counted as a retry.
            client = get_client()
            delay = client.available_in(holder) if holder is not None else client.lease_duration
            if frameworks.requeue(self.name, max(delay, client.heartbeat_period)):
                return None
            raise TaskLocked(
                f"Task {self.name} not run: {key!r} is held by a live run ({_who(holder)}), and a plain call "
                'cannot be put back in a queue (on_conflict="retry" is for a dramatiq actor).',
                holder,
            )
        if self.on_conflict == "raise":
            raise TaskLocked(f"Task {self.name} not run: {key!r} is held by a live run ({_who(holder)}).", holder)
        task_id = run.task_id if run is not None else None
        # The queue's id lets an operator match the skip to the queued copy (it arrived from outside: escaped).
        copy = f" (task id {printable(task_id)})" if task_id is not None else ""
        logger.info("Task %s%s skipped: %s is held by %s", printable(self.name), copy, printable(key), _who(holder))
        task_skipped(self.name)  # dynalock.tasks.skipped, when OpenTelemetry is installed
        signals.task_skipped.send(sender=key, task=self.name, holder=holder, task_id=task_id)
        return None


def _is_earlier_attempt(run: frameworks.TaskRun | None, holder: LockInfo) -> bool:
    """The holder is an earlier attempt of this very task (a retry meets it as it lets go)."""
    held = LockData.from_bytes(holder.data)
    if run is None or held is None:
        return False
    attempt = held.extra.get("attempt")
    return held.extra.get("task_id") == run.task_id and isinstance(attempt, int) and attempt < run.attempt


def _who(holder: LockInfo | None) -> str:
    if holder is None:
        return "a holder that could not be read"
    held = LockData.from_bytes(holder.data)
    who = held.holder if held is not None else (holder.owner_name or "an unknown owner")
    return f"{printable(who)}, token {holder.fencing_token}"


def lock_task(
    key: KeySpec = None,
    *,
    on_conflict: OnConflict = "skip",
    timeout: float | None = None,
    lease_duration: float | None = None,
    unique_while_queued: bool = False,
    queued_lease: float | None = None,
    limit: int = 1,
    min_hold: float | None = None,
) -> Callable[[F], F]:
    """Run the decorated task function on one worker at a time per key (see docs/django/tasks.md).

    ``limit=N``: at most N runs at once per key (a semaphore of N permits); a copy finding all N
    held by live runs follows ``on_conflict`` as a copy finding the key held does.

    Put it under the framework's decorator: ``@task`` / ``@app.task`` / ``@shared_task`` above, ``@lock_task()``
    below. ``on_conflict``: "skip" (return None, send ``task_skipped``), "raise" (TaskLocked), "wait" (up
    to ``timeout`` seconds, then TaskLocked) or "retry" (dramatiq: the message goes back in its queue, delayed by
    the holder's remaining lease, not counted as a retry). ``unique_while_queued`` makes :func:`enqueue_unique` refuse a
    second copy while one waits in the queue, for at most ``queued_lease`` seconds. ``min_hold``: the key
    stays held (no longer renewed, not released) until ``min_hold`` seconds after the run started, however
    early it ends, so copies of one schedule slot fired on many hosts run once.
    """
    _check_options(on_conflict, timeout, lease_duration, unique_while_queued, queued_lease)
    _check_limit(limit)
    check_min_hold(min_hold, where="lock_task(min_hold)")

    def decorate(function: F) -> F:
        _check_function(function)
        locked = LockedTask(
            function,
            key=key,
            on_conflict=on_conflict,
            timeout=timeout,
            lease_duration=lease_duration,
            unique_while_queued=unique_while_queued,
            queued_lease=queued_lease,
            limit=limit,
            min_hold=min_hold,
        )

        @functools.wraps(function)
        def run_locked(*args: Any, **kwargs: Any) -> Any:
            return locked.run(args, kwargs)

        run_locked.dynalock_task = locked  # type: ignore[attr-defined]  # how enqueue_unique finds it
        return cast(F, run_locked)

    return decorate


def locked_task_of(task: Any) -> LockedTask | None:
    """The LockedTask under a framework's task object, or of a decorated function; None when there is none."""
    found = getattr(frameworks.decorated_function(task), "dynalock_task", None)
    return found if isinstance(found, LockedTask) else None


def _check_function(function: Any) -> None:
    if frameworks.is_task_object(function):
        raise ConfigurationError(
            f"@lock_task got a framework's task object ({type(function).__name__}), not a function: put "
            "@lock_task() below @task / @app.task / @shared_task (the queue's decorator), right above the def."
        )
    if not callable(function):
        raise ConfigurationError(f"@lock_task decorates a function, not {function!r}.")
    if inspect.iscoroutinefunction(function):
        raise ConfigurationError(
            f"@lock_task does not take coroutine functions ({function.__qualname__} is async def): "
            "make the task a plain def."
        )


def _check_options(
    on_conflict: Any, timeout: Any, lease_duration: Any, unique_while_queued: Any, queued_lease: Any
) -> None:
    if on_conflict not in ON_CONFLICT:
        raise ConfigurationError(f"lock_task(on_conflict={on_conflict!r}): use one of {', '.join(ON_CONFLICT)}.")
    if on_conflict == "wait" and timeout is None:
        raise ConfigurationError(
            'lock_task(on_conflict="wait") needs timeout=, the most seconds a run waits for the key.'
        )
    if on_conflict != "wait" and timeout is not None:
        raise ConfigurationError(f'lock_task(timeout=...) applies only to on_conflict="wait", not {on_conflict!r}.')
    _check_seconds("timeout", timeout, allow_zero=True)
    _check_seconds("lease_duration", lease_duration, allow_zero=False)
    if unique_while_queued and queued_lease is None:
        raise ConfigurationError(
            "lock_task(unique_while_queued=True) needs queued_lease=, the most seconds a copy may wait in the "
            "queue (a copy lost there frees its key after that)."
        )
    if not unique_while_queued and queued_lease is not None:
        raise ConfigurationError("lock_task(queued_lease=...) applies only with unique_while_queued=True.")
    _check_seconds("queued_lease", queued_lease, allow_zero=False)


def _check_limit(limit: Any) -> None:
    try:
        check_permits(limit, where="lock_task(limit)")
    except InvalidLockRequest as error:
        raise ConfigurationError(f"{error} limit=1 (the default) is one run at a time.") from None


def _check_seconds(name: str, value: Any, *, allow_zero: bool) -> None:
    if value is None:
        return
    valid = isinstance(value, int | float) and not isinstance(value, bool) and value == value  # not NaN
    if not valid or value < 0 or (value == 0 and not allow_zero) or value == float("inf"):
        bound = "0 or more" if allow_zero else "more than 0"
        raise ConfigurationError(f"lock_task({name}={value!r}): give a finite number of seconds, {bound}.")
