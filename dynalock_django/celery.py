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

import datetime
import logging
import math
from typing import Any

from celery import beat, schedules
from celery.utils.imports import symbol_by_name
from celery.utils.time import maybe_make_aware
from django.db import Error as DatabaseError  # InterfaceError (a connection gone) is not a django.db.DatabaseError

from . import beat_sends
from .conf import dynalock_settings
from .dynamodb import printable
from .exceptions import ConfigurationError, DynalockError, LockNotAcquired, StaleFencingToken
from .leader import Leadership

__all__ = ["LeaderScheduler", "due_time"]

logger = logging.getLogger("dynalock_django.celery")

# The message header naming the due time a send is for (ISO 8601, UTC): a task may read it, tests do.
DUE_HEADER = "dynalock_due"

# Database failures in a row after which a leader lets the lease go (and sits out about a lease) so that a beat
# with a working database can lead: one failure is a blip, three a database this process cannot use.
FAILURES_BEFORE_STEPPING_DOWN = 3

# How far ahead of this host's clock a recorded run is believed: hosts under NTP agree within milliseconds;
# a record further ahead (a host whose clock is off) is read as now, so it silences no later leader.
FUTURE_RUN_BOUND = datetime.timedelta(seconds=1)


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
        # entry name -> (the entry as it was before its run was reserved, the reserved one): a refused send undoes it
        self._reserved: dict[str, tuple[Any, Any]] = {}
        self._clamped: dict[str, tuple[str, datetime.datetime]] = {}  # entry name -> (a record from ahead, read as)
        self._refused = False  # a due entry was not sent this tick: its due time stands, asked again after a pause
        self._database_failures = 0  # in a row
        self._sitting_out = 0  # ticks left before this process tries to lead again (after a database it cannot use)
        super().__init__(app, *args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """The wrapped scheduler's tick while this process leads; else a try for the lease, and a short sleep."""
        pause = float(min(self.max_interval, dynalock_settings.REFRESH_PERIOD))
        beat_sends.drop_unusable_connection()  # a connection broken since the last tick (database restarted)
        if not self.leads():
            return pause
        wait = float(super().tick(*args, **kwargs))
        if self._refused:
            # The heap holds the refused entry at its next run: rebuilt, it asks the restored one again, after a
            # pause (not at once: what refused it, a database or a lease, rarely comes back within a millisecond).
            self._refused = False
            self._heap = None
            return pause
        return wait

    def leads(self) -> bool:
        """Whether this process leads now: it steps down when its lease ran out, and tries to lead when it does not."""
        if self._leadership is not None:
            if self._leadership.is_leader():
                return True
            self._step_down("its lease ran out or was taken")
        if self._sitting_out:
            self._sitting_out -= 1
            return False
        leadership = Leadership(self.leader_name, timeout=0.0)
        try:
            leadership.acquire()
            self._last_runs = beat_sends.last_runs(leadership.key, formerly=self.leader_name)
        except LockNotAcquired:
            return False  # another beat leads
        except (DynalockError, DatabaseError) as error:
            logger.warning("Beat %r cannot lead now: %s", self.leader_name, error)
            if isinstance(error, DatabaseError):
                beat_sends.drop_connection()
            self._let_go(leadership, "the beat's sends could not be read")
            return False
        except BaseException:
            self._let_go(leadership, "reading the beat's sends failed")
            raise
        self._leadership = leadership
        logger.info("Beat %r leads (fencing token %s): sending due tasks", self.leader_name, _token(leadership))
        return True

    def is_due(self, entry: Any) -> Any:
        """The wrapped scheduler's answer, for the entry as last sent by any leader (not only by this process)."""
        _catch_up(entry, self._recorded_run(entry))
        return super().is_due(entry)

    def _recorded_run(self, entry: Any) -> datetime.datetime | None:
        """``entry``'s last run as recorded by a leader, read as now when later than now plus FUTURE_RUN_BOUND.

        A leader records its send at its own wall clock: one an hour ahead would otherwise keep every
        later leader from sending the entry for that hour. Now is never earlier than the real send (that
        came before its record was read), so the entry is not sent early. Read as now once per record,
        not at each tick (which would move the run on and on).
        """
        recorded = self._last_runs.get(entry.name)
        at = _moment(recorded)
        if recorded is None or at is None:
            return None
        clamped = self._clamped.get(entry.name)
        if clamped is not None and clamped[0] == recorded:
            return clamped[1]
        now = _aware(entry.default_now())
        if at <= now + FUTURE_RUN_BOUND:
            return at
        logger.warning(
            "Beat %r: %s's last run was recorded at %s, %.0f s after now on this host: read as now (a clock ahead?)",
            self.leader_name,
            printable(entry.name),
            printable(recorded),
            (at - now).total_seconds(),
        )
        self._clamped[entry.name] = (recorded, now)
        return now

    def reserve(self, entry: Any) -> Any:
        new_entry = super().reserve(entry)
        self._reserved[entry.name] = (entry, new_entry)
        return new_entry

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        """Send ``entry`` if this leader still holds its lease and records the send first under its token."""
        reserved = self._reserved.pop(entry.name, (None, None))[1]
        sent_at = reserved.last_run_at if reserved is not None else entry.default_now()
        leadership = self._leadership
        if leadership is None or not leadership.is_leader():
            logger.warning("Beat %r did not send %s: its lease ran out (paused?)", self.leader_name, entry.name)
            self._refuse(entry, reserved)
            return
        due = due_time(entry)
        message = _with_due(entry, due)  # built before the send is recorded: nothing is recorded that is not sent
        try:
            stored = beat_sends.advance(
                leadership.key,
                entry.name,
                read=self._last_runs.get(entry.name),
                new=_text(sent_at),
                token=_token(leadership),
                formerly=self.leader_name,
            )
        except StaleFencingToken as stale:
            logger.warning("Beat %r did not send %s: a newer leader wrote (%s)", self.leader_name, entry.name, stale)
            self._refuse(entry, reserved)
            self._step_down("a newer leader wrote the beat's sends")
            return
        except DatabaseError:
            logger.exception("Beat %r did not send %s: its send could not be recorded", self.leader_name, entry.name)
            self._refuse(entry, reserved)
            self._database_failed()
            return
        self._database_failures = 0
        if stored is not None:
            logger.info("Beat %r did not send %s due %s: another leader sent it", self.leader_name, entry.name, due)
            self._last_runs = stored
            return
        self._last_runs[entry.name] = _text(sent_at)
        super().apply_entry(message, producer=producer)

    def _refuse(self, entry: Any, reserved: Any) -> None:
        """Undo the reservation of ``entry``'s run: its due time stands, and the next tick asks it again."""
        self._refused = True
        if reserved is not None:
            _restore(reserved, entry)

    def _database_failed(self) -> None:
        """A fresh connection next time; and after a few failures in a row, another beat's turn to lead."""
        beat_sends.drop_connection()
        self._database_failures += 1
        if self._database_failures >= FAILURES_BEFORE_STEPPING_DOWN:
            self._database_failures = 0
            self._step_down(f"{FAILURES_BEFORE_STEPPING_DOWN} database failures in a row")
            # About a lease of polls (beat sleeps REFRESH_PERIOD after each), so a follower takes the lease first.
            self._sitting_out = math.ceil(dynalock_settings.LEASE_DURATION / dynalock_settings.REFRESH_PERIOD)

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
            self._let_go(leadership, why)

    def _let_go(self, leadership: Leadership, why: str) -> None:
        if leadership.lease is None:
            return  # never acquired: nothing to let go
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


def _moment(recorded: str | None) -> datetime.datetime | None:
    """A recorded run as a time (naive: UTC); None for none, or for text not ours (this leader's own view stands)."""
    if recorded is None:
        return None
    try:
        return _aware(datetime.datetime.fromisoformat(recorded))
    except ValueError:
        return None


def _catch_up(entry: Any, at: datetime.datetime | None) -> None:
    """Move ``entry``'s last run forward to ``at`` (recorded by a leader), if later; never back."""
    if at is None:
        return
    if at > _aware(entry.last_run_at):
        naive = entry.last_run_at.tzinfo is None  # Celery reads a naive time as UTC
        entry.last_run_at = _aware(at).astimezone(datetime.UTC).replace(tzinfo=None) if naive else at


def _restore(reserved: Any, entry: Any) -> None:
    """``reserved`` (and the database row behind it, django-celery-beat's) back to ``entry``'s last run and count."""
    for target in (reserved, getattr(reserved, "model", None)):
        if target is not None and hasattr(target, "last_run_at"):
            target.last_run_at = entry.last_run_at
            if hasattr(target, "total_run_count"):
                target.total_run_count = entry.total_run_count


def _with_due(entry: Any, due: datetime.datetime) -> Any:
    """A copy of ``entry`` whose message carries its due time (the entry itself, kept in the schedule, is unchanged).

    Not ``copy.copy``: it rebuilds the entry through ScheduleEntry's ``__reduce__``, i.e. its class called with
    ScheduleEntry's arguments, and django-celery-beat's ModelEntry takes others (a TypeError, every send).
    """
    sent = object.__new__(type(entry))
    sent.__dict__.update(entry.__dict__)
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
