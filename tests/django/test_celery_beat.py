"""LeaderScheduler's tick on the in-process store and the virtual clock: several beats, one sending, each due time once.

Each "host" is a LeaderScheduler over Celery's in-memory ``Scheduler``, with a Celery app of its own
(same name: same election) whose sends are recorded, and a LockClient of its own (another process's)
on the shared virtual clock. A host ticks only when the test says so; its death is its client closed,
its pause its heartbeat stopped and no tick, for as long as the test lets the clock run.
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from celery import Celery, beat
from celery.beat import ScheduleEntry
from celery.schedules import schedule
from django.conf import settings
from django.db import DatabaseError

from dynalock_django import beat_sends
from dynalock_django.celery import DUE_HEADER, LeaderScheduler
from dynalock_django.client import client_replaced_by
from dynalock_django.dynamodb import LockClient
from dynalock_django.exceptions import ConfigurationError, StaleFencingToken
from dynalock_django.testing import LocksInMemory, locks_in_memory

pytestmark = pytest.mark.django_db

LEASE, HEARTBEAT, REFRESH = 4.0, 1.0, 0.5
STEP = 0.25  # virtual seconds between two rounds of ticks


class Host:
    """One beat process: its app (sends recorded), its scheduler, its client."""

    def __init__(
        self,
        name: str,
        memory: LocksInMemory,
        sends: list[tuple[str, str, str]],
        scheduler_class: Any = "celery.beat:Scheduler",
        *,
        ahead: float = 0.0,
        key_prefix: str | None = None,
        **entries: float,
    ) -> None:
        self.name = name
        self.client: LockClient = memory.new_client()
        self.app = Celery("billing", broker="memory://", set_as_current=False)
        self.key_prefix = key_prefix  # its deployment's KEY_PREFIX (None: the suite's)

        def now() -> datetime.datetime:  # its wall clock, ``ahead`` seconds off
            return datetime.datetime.fromtimestamp(memory.clock.time() + ahead, datetime.UTC)

        self.app.conf.beat_schedule = {
            entry: {"task": f"billing.{entry}", "schedule": schedule(datetime.timedelta(seconds=every), nowfun=now)}
            for entry, every in (entries or {"tick": 1.0}).items()
        }

        def send_task(task: str, *args: Any, headers: dict[str, str], **options: Any) -> None:
            sends.append((name, task.removeprefix("billing."), headers[DUE_HEADER]))

        self.app.send_task = send_task
        with self.as_current():
            self.scheduler = LeaderScheduler(self.app, scheduler_class=scheduler_class)

    @contextmanager
    def as_current(self) -> Iterator[None]:
        # The prefix is set in place: override_settings would close the suite's client (setting_changed).
        configured = settings.DYNALOCK
        before = configured.get("KEY_PREFIX", None)
        if self.key_prefix is not None:
            configured["KEY_PREFIX"] = self.key_prefix
        try:
            with client_replaced_by(self.client):
                yield
        finally:
            if self.key_prefix is not None:
                if before is None:
                    del configured["KEY_PREFIX"]
                else:
                    configured["KEY_PREFIX"] = before

    def tick(self) -> None:
        """What beat's loop does until it would sleep: tick while something is due."""
        with self.as_current():
            while self.scheduler.tick() == 0:
                pass

    def pause(self) -> None:
        """SIGSTOP: its heartbeat stands still (and the test ticks it no more)."""
        self.client.process_state.heartbeat.stop(timeout=LEASE)


@pytest.fixture
def memory() -> Iterator[LocksInMemory]:
    with locks_in_memory(LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=HEARTBEAT, REFRESH_PERIOD=REFRESH) as memory:
        yield memory


def run(memory: LocksInMemory, hosts: list[Host], seconds: float) -> None:
    for _ in range(round(seconds / STEP)):
        for host in hosts:
            host.tick()
        memory.advance(STEP)


def dues(sends: list[tuple[str, str, str]], entry: str = "tick") -> list[datetime.datetime]:
    return [datetime.datetime.fromisoformat(due) for _, name, due in sends if name == entry]


def assert_each_due_time_once(sends: list[tuple[str, str, str]], entry: str = "tick") -> None:
    times = dues(sends, entry)
    assert len(times) == len(set(times)), sorted(times)
    assert times == sorted(times)


def test_the_leader_sends_every_due_time_and_the_followers_send_nothing(memory):
    sends: list[tuple[str, str, str]] = []
    hosts = [Host(name, memory, sends) for name in ("a", "b", "c")]
    run(memory, hosts, 10.0)

    assert {host for host, _, _ in sends} == {"a"}  # the first to tick leads, alone
    assert_each_due_time_once(sends)
    times = dues(sends)
    assert len(times) >= 9
    assert all(later - earlier == datetime.timedelta(seconds=1) for earlier, later in itertools.pairwise(times))


def test_a_dead_leaders_beat_is_taken_over_within_a_lease_and_nothing_is_sent_twice(memory):
    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)
    run(memory, [a, b], 5.0)
    last_by_a = dues(sends)[-1]
    a.client.close(release=False)  # SIGKILL: no release, no more renewals
    died = memory.clock.time()
    run(memory, [b], 2 * LEASE)

    by_b = [datetime.datetime.fromisoformat(due) for host, _, due in sends if host == "b"]
    assert by_b, "b never took over"
    assert_each_due_time_once(sends)
    # The first due time b sends is at most a lease (plus a poll and a step of this loop) after a's last renewal.
    gap = (by_b[0] - last_by_a).total_seconds()
    assert gap <= HEARTBEAT + LEASE + REFRESH + STEP + 1.0
    assert by_b[0].timestamp() - died <= LEASE + REFRESH + STEP + 1.0


def test_a_leader_stopped_on_purpose_hands_over_at_once(memory):
    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)
    run(memory, [a, b], 3.0)
    with a.as_current():
        a.scheduler.close()  # SIGTERM: beat closes its scheduler on the way out
    stopped = memory.clock.time()
    run(memory, [b], 2.0)

    first_by_b = next(datetime.datetime.fromisoformat(due) for host, _, due in sends if host == "b")
    assert first_by_b.timestamp() - stopped <= REFRESH + 1.0  # b's next poll, not a lease later
    assert_each_due_time_once(sends)


def test_a_leader_paused_past_its_lease_sends_nothing_when_it_wakes(memory):
    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)
    run(memory, [a, b], 3.0)
    a.pause()
    run(memory, [b], 2 * LEASE)  # a frozen: b takes over and sends
    sent_before_a_woke = len(sends)
    run(memory, [a, b], 3.0)  # a wakes: its lease ran out on its own clock

    assert {host for host, _, _ in sends[sent_before_a_woke:]} == {"b"}
    assert_each_due_time_once(sends)


def test_a_leader_whose_lease_ran_out_while_paused_sends_only_under_a_new_lease(memory):
    """Its own clock says the lease is gone: it does not trust it, though no newer token fences it out. Nobody took
    the lock, so it steps down, takes the lock afresh (a newer token) and sends under that."""
    from dynalock_django.models import BeatSends

    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)
    run(memory, [a, b], 3.0)
    old_token = a.scheduler._leadership.lease.fencing_token
    a.pause()
    memory.advance(2 * LEASE)  # nobody ticks: b has not looked at the lease yet
    woke = len(sends)
    a.tick()

    assert [host for host, _, _ in sends[woke:]] == ["a"]
    new_token = a.scheduler._leadership.lease.fencing_token
    assert new_token > old_token
    assert BeatSends.objects.get().fencing_token == new_token  # the send was recorded under the new lease
    assert_each_due_time_once(sends)


def test_a_paused_leader_that_checked_its_lease_just_before_is_refused_by_the_row(memory, monkeypatch):
    """The pause falls between a's look at its lease and its send: the row's fence refuses it once b wrote the row.

    b's entries start later than a's (set up 3 s later): when a wakes, "report" (every 10 s) is due for a and not
    yet for b, and nobody recorded a run of it. Only the fencing token, not the entry's last run, refuses it.
    """
    sends: list[tuple[str, str, str]] = []
    a = Host("a", memory, sends, tick=1.0, report=10.0)
    run(memory, [a], 3.0)
    b = Host("b", memory, sends, tick=1.0, report=10.0)
    a.pause()
    run(memory, [b], 2 * LEASE)
    assert [name for _, name, _ in sends if name == "report"] == []  # nobody sent "report" yet
    assert [host for host, _, _ in sends][-1] == "b"  # but it did send: it wrote the row under its token
    woke = len(sends)
    leadership = a.scheduler._leadership
    monkeypatch.setattr(leadership, "is_leader", lambda: True)  # a believes it leads: it looked before the pause
    a.tick()

    assert sends[woke:] == []
    assert a.scheduler._leadership is None  # refused, it stepped down
    assert_each_due_time_once(sends, "tick")
    assert_each_due_time_once(sends, "report")


def test_an_entrys_run_is_recorded_once_whoever_read_it_first():
    beat_sends.advance("beat", "tick", read=None, new="2026-01-01T00:00:01+00:00", token=5)
    # A second leader that read the same (empty) record cannot send the same run again.
    stored = beat_sends.advance("beat", "tick", read=None, new="2026-01-01T00:00:01.5+00:00", token=6)
    assert stored == {"tick": "2026-01-01T00:00:01+00:00"}
    # The newer leader advances from what is stored; the older one is refused from then on, for every entry.
    assert beat_sends.advance("beat", "tick", read=stored["tick"], new="2026-01-01T00:00:02+00:00", token=6) is None
    with pytest.raises(StaleFencingToken):
        beat_sends.advance("beat", "other", read=None, new="2026-01-01T00:00:03+00:00", token=5)
    assert beat_sends.last_runs("beat") == {"tick": "2026-01-01T00:00:02+00:00"}


def test_a_row_edited_into_nonsense_is_read_as_no_record():
    from dynalock_django.models import BeatSends

    BeatSends.objects.create(beat="beat", last_runs={"tick": 3, "ok": "2026-01-01T00:00:00+00:00", "7": None})
    assert beat_sends.last_runs("beat") == {"ok": "2026-01-01T00:00:00+00:00"}
    BeatSends.objects.filter(beat="beat").update(last_runs=["not", "a", "dict"])
    assert beat_sends.last_runs("beat") == {}


def test_importing_dynalock_django_does_not_import_celery():
    import subprocess
    import sys

    code = (
        "import os, sys, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'tests.settings'; django.setup(); "
        "import dynalock_django, dynalock_django.models, dynalock_django.beat_sends, dynalock_django.tasks; "
        "from dynalock_django import Leadership, lock_key; print('celery' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


@pytest.mark.parametrize(
    ("given", "says"),
    [("no.such.module:Scheduler", "cannot be imported"), ("celery.beat:ScheduleEntry", "subclass of celery.beat")],
)
def test_a_scheduler_class_that_is_not_one_is_refused_with_the_fix(given, says):
    with pytest.raises(ConfigurationError, match=says):
        LeaderScheduler(Celery("x", set_as_current=False), scheduler_class=given, lazy=True)


def test_the_wrapped_scheduler_comes_from_the_setting(settings, tmp_path):
    settings.DYNALOCK = {**settings.DYNALOCK, "BEAT_SCHEDULER": "celery.beat:Scheduler"}
    scheduler = LeaderScheduler(Celery("x", set_as_current=False), lazy=True)
    assert type(scheduler).__mro__[1:4] == (LeaderScheduler, __import__("celery.beat").beat.Scheduler, object)
    settings.DYNALOCK = {k: v for k, v in settings.DYNALOCK.items() if k != "BEAT_SCHEDULER"}
    default = LeaderScheduler(Celery("x", set_as_current=False), schedule_filename=str(tmp_path / "s"), lazy=True)
    assert type(default).__name__ == "LeaderPersistentScheduler"


def test_a_beat_that_cannot_reach_dynamodb_sends_nothing_and_says_so(memory, caplog):
    sends: list[tuple[str, str, str]] = []
    a = Host("a", memory, sends)
    memory.faults.hang()
    a.tick()
    memory.faults.heal()
    assert sends == []
    assert "cannot lead now" in caplog.text


def test_a_send_the_database_cannot_record_is_not_sent_and_the_next_tick_tries_again(memory, monkeypatch, caplog):
    from django.db import DatabaseError

    sends: list[tuple[str, str, str]] = []
    a = Host("a", memory, sends)
    run(memory, [a], 2.0)
    sent = len(sends)

    def unavailable(*args, **kwargs):
        raise DatabaseError("the database is down")

    monkeypatch.setattr(beat_sends, "advance", unavailable)
    run(memory, [a], 2.0)
    assert len(sends) == sent
    assert "its send could not be recorded" in caplog.text
    monkeypatch.undo()
    run(memory, [a], 2.0)
    assert len(sends) > sent
    assert_each_due_time_once(sends)


def test_a_run_recorded_by_another_leader_of_the_same_term_is_not_sent_again(memory):
    """The row moved on under this leader's own token (say, a second process given its lease): it sends nothing."""
    sends: list[tuple[str, str, str]] = []
    a = Host("a", memory, sends)
    run(memory, [a], 2.0)
    token = a.scheduler._leadership.lease.fencing_token
    recorded = beat_sends.last_runs(a.scheduler.leader_name)["tick"]
    # A run recorded later than a's (within the bound a clock ahead is believed: FUTURE_RUN_BOUND).
    later = datetime.datetime.fromisoformat(recorded) + datetime.timedelta(seconds=0.75)
    beat_sends.advance(a.scheduler.leader_name, "tick", read=recorded, new=later.isoformat(), token=token)
    sent = len(sends)
    run(memory, [a], 5.0)
    assert dues(sends[sent:])[0] >= later + datetime.timedelta(seconds=1)  # a period after the recorded run, not before
    assert_each_due_time_once(sends)


def test_a_recorded_run_that_is_not_a_time_is_ignored(memory):
    from dynalock_django.models import BeatSends

    sends: list[tuple[str, str, str]] = []
    a = Host("a", memory, sends)
    BeatSends.objects.create(beat=a.scheduler.leader_name, last_runs={"tick": "not a time"})
    run(memory, [a], 3.0)  # its own last run stands; the record moves on from what it read
    assert len(dues(sends)) >= 2
    assert_each_due_time_once(sends)


def test_due_times_are_the_same_for_every_leader_that_read_the_same_last_run():
    from celery.beat import ScheduleEntry
    from celery.schedules import crontab

    from dynalock_django.celery import due_time

    app = Celery("x", set_as_current=False)
    last = datetime.datetime(2026, 1, 1, 10, 0, 30, tzinfo=datetime.UTC)

    def entry(every: Any) -> Any:
        return ScheduleEntry(name="e", task="t", schedule=every, last_run_at=last, app=app)

    assert due_time(entry(datetime.timedelta(seconds=5))) == last + datetime.timedelta(seconds=5)
    assert due_time(entry(crontab(minute="*/15"))) == datetime.datetime(2026, 1, 1, 10, 15, tzinfo=datetime.UTC)
    # Any other schedule (here a relative one): now plus what it says remains, at most a period after the last run.
    relative = due_time(entry(schedule(datetime.timedelta(seconds=5), relative=True)))
    assert last <= relative <= last + datetime.timedelta(seconds=6)


def test_beats_banner_names_the_election(memory):
    a = Host("a", memory, [])
    assert "leader election -> 'celery beat billing'" in a.scheduler.info


def test_a_follower_tries_for_the_lease_every_refresh_period_with_one_refused_write(memory):
    from ..dynamodb_support import RequestCounter

    a, b = Host("a", memory, []), Host("b", memory, [])
    a.tick()
    counter = RequestCounter(b.client.dynamodb)
    with b.as_current():
        assert b.scheduler.tick() == REFRESH  # beat sleeps that long before the next try
    assert counter.calls == {"UpdateItem": 1}


def test_a_beat_that_cannot_read_its_sends_lets_the_lease_go_at_once(memory, monkeypatch, caplog):
    from django.db import DatabaseError

    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)

    def unavailable(beat, **kwargs):
        raise DatabaseError("the database is down")

    monkeypatch.setattr(beat_sends, "last_runs", unavailable)
    a.tick()
    assert "cannot lead now" in caplog.text
    monkeypatch.undo()
    b.tick()  # a released what it could not use: b leads at its first try
    assert b.scheduler._leadership is not None
    run(memory, [a, b], 2.0)
    assert {host for host, _, _ in sends} == {"b"}


class Row:
    """A schedule's database row, as django-celery-beat's PeriodicTask: its entries read and write it."""

    def __init__(self, name: str, task: str, every: Any) -> None:
        self.name, self.task, self.schedule = name, task, every
        self.last_run_at: datetime.datetime | None = None
        self.total_run_count = 0


class RowEntry(ScheduleEntry):  # type: ignore[misc]
    """An entry built from a row, as django-celery-beat's ModelEntry: its constructor is not ScheduleEntry's."""

    def __init__(self, row: Row, app: Any = None) -> None:
        self.row = self.model = row
        if row.last_run_at is None:
            row.last_run_at = row.schedule.now()
        super().__init__(
            name=row.name,
            task=row.task,
            schedule=row.schedule,
            last_run_at=row.last_run_at,
            app=app,
            total_run_count=row.total_run_count,
        )

    def __next__(self) -> RowEntry:
        self.model.last_run_at = self.default_now()
        self.model.total_run_count += 1
        return type(self)(self.model, app=self.app)


class RowScheduler(beat.Scheduler):  # type: ignore[misc]
    """django-celery-beat's DatabaseScheduler in small: entries from rows, a reserve that moves the row."""

    Entry = RowEntry

    def setup_schedule(self) -> None:
        self.data = {
            name: RowEntry(Row(name, options["task"], options["schedule"]), app=self.app)
            for name, options in self.app.conf.beat_schedule.items()
        }

    def reserve(self, entry: RowEntry) -> RowEntry:
        return next(entry)  # the row moved; the schedule keeps the entry it had (DatabaseScheduler's way)


def test_entries_whose_constructor_is_not_schedule_entrys_are_sent(memory):
    """django-celery-beat's ModelEntry(model, app): a copy through ScheduleEntry's __reduce__ is a TypeError."""
    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends, RowScheduler), Host("b", memory, sends, RowScheduler)
    run(memory, [a, b], 5.0)

    assert {host for host, _, _ in sends} == {"a"}
    assert len(dues(sends)) >= 4
    assert_each_due_time_once(sends)
    assert beat_sends.last_runs(a.scheduler.leader_name)["tick"]  # recorded, and sent


def down(*args: Any, **kwargs: Any) -> Any:
    raise DatabaseError("the database is down")


@pytest.mark.parametrize("refusal", ["database", "lease"])
def test_a_due_time_refused_once_is_sent_when_the_refusal_passes(memory, monkeypatch, refusal):
    """A 60 s entry refused at its due time (database blip, lease lapsed under the send): sent a moment later, not
    60 s later; and beat is told to wait a poll, not to tick again at once."""
    sends: list[tuple[str, str, str]] = []
    a = Host("a", memory, sends, tick=60.0)
    run(memory, [a], 59.5)
    assert sends == []
    if refusal == "database":
        monkeypatch.setattr(beat_sends, "advance", down)
    else:
        monkeypatch.setattr(a.scheduler._leadership, "is_leader", iter([True, False]).__next__)  # leads(), then not
    memory.advance(1.0)  # due now
    with a.as_current():
        assert a.scheduler.tick() == REFRESH
    assert sends == []
    monkeypatch.undo()
    run(memory, [a], 2.0)

    assert len(dues(sends)) == 1  # the due time that met the refusal, sent once
    assert_each_due_time_once(sends)


def test_a_refused_send_puts_back_the_row_of_a_database_scheduler(memory, monkeypatch):
    """DatabaseScheduler's reserve moved the row's last run and count: a refused send puts them back."""
    sends: list[tuple[str, str, str]] = []
    a = Host("a", memory, sends, RowScheduler, tick=60.0)
    run(memory, [a], 1.0)
    row = a.scheduler.data["tick"].model
    last_run, count = row.last_run_at, row.total_run_count
    monkeypatch.setattr(beat_sends, "advance", down)
    run(memory, [a], 60.0)
    assert (row.last_run_at, row.total_run_count) == (last_run, count)
    monkeypatch.undo()
    run(memory, [a], 2.0)
    assert len(dues(sends)) == 1
    assert row.total_run_count == count + 1


@pytest.mark.django_db(transaction=True)
def test_a_broken_database_connection_is_replaced_and_sends_resume(memory, monkeypatch):
    """The server closed the connection (a database restart): the leader opens a new one, sends go on."""
    from django.db import connection

    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)
    run(memory, [a, b], 2.0)
    sent = len(sends)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", None)  # persistent: not closed after each tick
    connection.close()
    connection.ensure_connection()
    connection.connection.close()  # behind Django's back, as a server closing it
    run(memory, [a, b], 3.0)
    assert len(dues(sends)) >= sent + 2
    assert_each_due_time_once(sends)


def test_a_connection_gone_while_taking_the_lead_lets_the_lease_go(memory, monkeypatch, caplog):
    """InterfaceError (a connection gone) is not a DatabaseError: it too lets the lease go, and beat goes on."""
    from django.db import InterfaceError

    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)

    def gone(beat: str, **kwargs: Any) -> Any:
        raise InterfaceError("connection already closed")

    monkeypatch.setattr(beat_sends, "last_runs", gone)
    a.tick()
    monkeypatch.undo()
    b.tick()
    assert b.scheduler._leadership is not None  # a's lease was released, not leaked


def test_a_leader_whose_database_keeps_failing_steps_down_for_another(memory, monkeypatch):
    sends: list[tuple[str, str, str]] = []
    a, b = Host("a", memory, sends), Host("b", memory, sends)
    run(memory, [a, b], 2.0)
    monkeypatch.setattr(beat_sends, "advance", down)
    run(memory, [a], 3 * REFRESH + 3 * STEP)  # three refused sends, a poll apart
    assert a.scheduler._leadership is None
    monkeypatch.undo()
    run(memory, [a, b], 3.0)
    assert b.scheduler._leadership is not None  # b's turn: a sat out
    assert_each_due_time_once(sends)


def test_a_beat_whose_name_is_too_long_for_the_column_gets_a_row_of_its_own():
    """The key column is 255 characters (MySQL's InnoDB index limit, utf8mb4): longer names are shortened uniquely."""
    from dynalock_django.models import BeatSends

    limit = BeatSends._meta.get_field("beat").max_length
    assert limit * 4 <= 3072  # utf8mb4 bytes within InnoDB's key limit
    names = ["celery beat " + "x" * 300 + "1", "celery beat " + "x" * 300 + "2"]
    for token, name in enumerate(names, start=1):
        beat_sends.advance(name, "tick", read=None, new=f"2026-01-01T00:00:0{token}+00:00", token=token)
    assert [beat_sends.last_runs(name) for name in names] == [
        {"tick": "2026-01-01T00:00:01+00:00"},
        {"tick": "2026-01-01T00:00:02+00:00"},
    ]
    assert all(len(key) <= limit for key in BeatSends.objects.values_list("beat", flat=True))
