"""LeaderScheduler: ``celery beat`` on every host, and only the host holding the beat's lease sends.

    celery -A proj beat -S dynalock_django.celery.LeaderScheduler

Each beat takes part in an election (a :class:`~dynalock_django.leader.Leadership` on
``"celery beat <app name>"``): the leader ticks the wrapped scheduler (Celery's
``PersistentScheduler`` unless ``DYNALOCK["BEAT_SCHEDULER"]``, a subclass's ``scheduler_class`` or
``scheduler_class=`` names another, such as django-celery-beat's ``DatabaseScheduler``); the others
try for the lease every ``REFRESH_PERIOD`` and send nothing. A due entry is sent only after its last
run was advanced in the beat's row (:mod:`.beat_sends`) under the leader's fencing token, so a
leader paused past its lease cannot send what its successor sent, and no run is sent twice. A
leader that dies is replaced within about a lease; one stopped (SIGTERM) hands over at once.

Importing ``dynalock_django`` never imports Celery: only this module does.
"""

from __future__ import annotations

import copy
import datetime
import logging
from typing import Any

from celery import beat, schedules
from celery.utils.imports import symbol_by_name
from celery.utils.time import maybe_make_aware
from django.db import DatabaseError

from . import beat_sends
from .conf import dynalock_settings
from .exceptions import ConfigurationError, DynalockError, LockNotAcquired, StaleFencingToken
from .leader import Leadership

__all__ = ["LeaderScheduler", "due_time"]

logger = logging.getLogger("dynalock_django.celery")

# The message header naming the due time a send is for (ISO 8601, UTC): a task may read it, tests do.
DUE_HEADER = "dynalock_due"


class LeaderScheduler(beat.Scheduler):  # type: ignore[misc]  # Celery has no type hints
    """A Celery beat scheduler that sends only while this process leads the beat's election.

    Instantiated, it is a subclass of both this class and the scheduler it wraps (``scheduler_class``:
    a class or a dotted path, ``"module:Class"`` or ``"module.Class"``).
    """

    scheduler_class: type | str | None = None
    _wrapped: type | None = None  # set on the combined classes only

    def __new__(cls, app: Any, *args: Any, scheduler_class: type | str | None = None, **kwargs: Any) -> Any:
        if cls._wrapped is None:
            cls = _combined(cls, _scheduler_class(scheduler_class or cls.scheduler_class))
        return super().__new__(cls)

    def __init__(self, app: Any, *args: Any, scheduler_class: type | str | None = None, **kwargs: Any) -> None:
        self.leader_name = f"celery beat {app.main or 'celery'}"
        self._leadership: Leadership | None = None
        self._last_runs: dict[str, str] = {}  # the beat's row as this leader last read or wrote it
        self._reserved: dict[str, datetime.datetime] = {}  # entry name -> the last run its send records
        super().__init__(app, *args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """The wrapped scheduler's tick while this process leads; else a try for the lease, and a short sleep."""
        if not self.leads():
            return float(min(self.max_interval, dynalock_settings.REFRESH_PERIOD))
        return float(super().tick(*args, **kwargs))

    def leads(self) -> bool:
        """Whether this process leads now: it steps down when its lease ran out, and tries to lead when it does not."""
        if self._leadership is not None:
            if self._leadership.is_leader():
                return True
            self._step_down("its lease ran out or was taken")
        leadership = Leadership(self.leader_name, timeout=0.0)
        try:
            leadership.acquire()
            self._last_runs = beat_sends.last_runs(self.leader_name)
        except LockNotAcquired:
            return False  # another beat leads
        except (DynalockError, DatabaseError) as error:
            logger.warning("Beat %r cannot lead now: %s", self.leader_name, error)
            if leadership.lease is not None:  # the lease, but not the row: let another beat try
                self._leadership = leadership
                self._step_down("the beat's sends could not be read")
            return False
        self._leadership = leadership
        logger.info("Beat %r leads (fencing token %s): sending due tasks", self.leader_name, _token(leadership))
        return True

    def is_due(self, entry: Any) -> Any:
        """The wrapped scheduler's answer, for the entry as last sent by any leader (not only by this process)."""
        _catch_up(entry, self._last_runs.get(entry.name))
        return super().is_due(entry)

    def reserve(self, entry: Any) -> Any:
        new_entry = super().reserve(entry)
        self._reserved[entry.name] = new_entry.last_run_at
        return new_entry

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        """Send ``entry`` if this leader still holds its lease and records the send first under its token."""
        sent_at = self._reserved.pop(entry.name, None) or entry.default_now()
        leadership = self._leadership
        if leadership is None or not leadership.is_leader():
            logger.warning("Beat %r did not send %s: its lease ran out (paused?)", self.leader_name, entry.name)
            return
        due = due_time(entry)
        try:
            stored = beat_sends.advance(
                self.leader_name,
                entry.name,
                read=self._last_runs.get(entry.name),
                new=_text(sent_at),
                token=_token(leadership),
            )
        except StaleFencingToken as stale:
            logger.warning("Beat %r did not send %s: a newer leader wrote (%s)", self.leader_name, entry.name, stale)
            self._step_down("a newer leader wrote the beat's sends")
            return
        except DatabaseError:
            logger.exception("Beat %r did not send %s: its send could not be recorded", self.leader_name, entry.name)
            return
        if stored is not None:
            logger.info("Beat %r did not send %s due %s: another leader sent it", self.leader_name, entry.name, due)
            self._last_runs = stored
            return
        self._last_runs[entry.name] = _text(sent_at)
        super().apply_entry(_with_due(entry, due), producer=producer)

    def close(self) -> None:
        """Close the wrapped scheduler, then step down: a beat stopped on purpose hands over at once."""
        try:
            super().close()
        finally:
            if self._leadership is not None:
                self._step_down("the beat stopped")

    def _step_down(self, why: str) -> None:
        leadership, self._leadership = self._leadership, None
        if leadership is not None:
            logger.info("Beat %r stops leading: %s", self.leader_name, why)
            try:
                leadership.release()
            except DynalockError as error:  # unanswered or lost: the lease frees itself within one lease
                logger.warning("Beat %r: its lease was not released: %s", self.leader_name, error)

    @property
    def info(self) -> str:
        return f"{super().info}\n    . leader election -> {self.leader_name!r} (dynalock_django)"


def due_time(entry: Any) -> datetime.datetime:
    """When ``entry`` fell due after its last run: the same for every leader that read the same last run."""
    schedule = entry.schedule
    last_run_at = _aware(entry.last_run_at)
    if isinstance(schedule, schedules.crontab):
        start, delta, _ = schedule.remaining_delta(last_run_at)
        return _aware(start + delta)
    if isinstance(schedule, schedules.schedule) and not schedule.relative:
        return _aware(last_run_at + schedule.run_every)
    return _aware(schedule.now() + schedule.remaining_estimate(last_run_at))


def _aware(moment: Any) -> datetime.datetime:
    """Celery's reading of a time: a naive one is UTC."""
    aware: datetime.datetime = maybe_make_aware(moment)
    return aware


def _catch_up(entry: Any, recorded: str | None) -> None:
    """Move ``entry``'s last run forward to the one recorded by a leader, if later; never back."""
    if recorded is None:
        return
    try:
        at = datetime.datetime.fromisoformat(recorded)
    except ValueError:
        return  # not ours: this leader's own view stands
    if _aware(at) > _aware(entry.last_run_at):
        naive = entry.last_run_at.tzinfo is None  # Celery reads a naive time as UTC
        entry.last_run_at = _aware(at).astimezone(datetime.UTC).replace(tzinfo=None) if naive else at


def _with_due(entry: Any, due: datetime.datetime) -> Any:
    """A copy of ``entry`` whose message carries its due time (the entry itself, kept in the schedule, is unchanged)."""
    sent = copy.copy(entry)
    options = dict(entry.options or {})
    options["headers"] = {**(options.get("headers") or {}), DUE_HEADER: _text(due)}
    sent.options = options
    return sent


def _token(leadership: Leadership) -> int:
    assert leadership.lease is not None  # acquired: only a leadership that leads is kept
    return leadership.lease.fencing_token


def _text(moment: datetime.datetime) -> str:
    return _aware(moment).astimezone(datetime.UTC).isoformat()


def _scheduler_class(given: type | str | None) -> type:
    path = given or dynalock_settings.BEAT_SCHEDULER
    try:
        found = symbol_by_name(path) if isinstance(path, str) else path
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigurationError(
            f"The scheduler LeaderScheduler wraps, {path!r}, cannot be imported ({error}): name a Celery beat "
            'scheduler class, e.g. "celery.beat:PersistentScheduler" or '
            '"django_celery_beat.schedulers:DatabaseScheduler" (pip install django-celery-beat).'
        ) from error
    if not (isinstance(found, type) and issubclass(found, beat.Scheduler)) or issubclass(found, LeaderScheduler):
        raise ConfigurationError(
            f"LeaderScheduler wraps a Celery beat scheduler class (a subclass of celery.beat.Scheduler, not "
            f"LeaderScheduler itself), not {path!r}."
        )
    return found


_COMBINED: dict[tuple[type, type], type[LeaderScheduler]] = {}


def _combined(leader: type[LeaderScheduler], wrapped: type) -> type[LeaderScheduler]:
    """``leader`` over ``wrapped`` (one class per pair): its tick, sends and close first, then the wrapped one's own."""
    if (leader, wrapped) not in _COMBINED:
        name = f"Leader{wrapped.__name__}"
        _COMBINED[leader, wrapped] = type(name, (leader, wrapped), {"_wrapped": wrapped, "__module__": __name__})
    return _COMBINED[leader, wrapped]
