"""LeaderScheduler across hosts that differ: a wall clock far ahead, another deployment's KEY_PREFIX on one database.

The hosts are test_celery_beat's (a LeaderScheduler each, on the in-process store and the virtual clock).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterator

import pytest

from dynalock_django import beat_sends
from dynalock_django.celery import FUTURE_RUN_BOUND
from dynalock_django.models import BeatSends
from dynalock_django.testing import LocksInMemory, locks_in_memory

from .test_celery_beat import HEARTBEAT, LEASE, REFRESH, Host, assert_each_due_time_once, dues, run

pytestmark = pytest.mark.django_db

HOUR = 3600.0


@pytest.fixture
def memory() -> Iterator[LocksInMemory]:
    with locks_in_memory(LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=HEARTBEAT, REFRESH_PERIOD=REFRESH) as memory:
        yield memory


def test_a_leader_whose_clock_is_an_hour_ahead_does_not_silence_the_next_for_that_hour(memory, caplog):
    sends: list[tuple[str, str, str]] = []
    fast = Host("fast", memory, sends, ahead=HOUR)
    run(memory, [fast], 3.0)  # it leads, and records its sends an hour ahead
    assert {host for host, _, _ in sends} == {"fast"}
    with fast.as_current():
        fast.scheduler.close()  # stopped: hands over at once
    stopped = memory.clock.time()

    b = Host("b", memory, sends)
    with caplog.at_level(logging.WARNING, logger="dynalock_django.celery"):
        run(memory, [b], 5.0)

    by_b = [datetime.datetime.fromisoformat(due) for host, _, due in sends if host == "b"]
    # It sends on within two periods (a tick of Celery's heap), not an hour later; and never early: its first
    # due time is a period after it read the record, itself after fast's last send.
    # (A millisecond for the float rounding of today's epoch seconds: the virtual wall clock starts at now.)
    assert stopped + 1.0 <= by_b[0].timestamp() <= stopped + 2.0 + 1e-3
    assert len(by_b) >= 3
    assert_each_due_time_once([send for send in sends if send[0] == "b"])
    assert "read as now (a clock ahead?)" in caplog.text
    assert caplog.text.count("read as now") == 1  # once per record, not at every tick


def test_a_leader_slightly_ahead_within_the_bound_is_believed(memory, caplog):
    sends: list[tuple[str, str, str]] = []
    ahead = FUTURE_RUN_BOUND.total_seconds() / 2
    fast = Host("fast", memory, sends, ahead=ahead)
    run(memory, [fast], 3.0)
    last_by_fast = dues(sends)[-1]
    with fast.as_current():
        fast.scheduler.close()
    b = Host("b", memory, sends)
    run(memory, [b], 3.0)
    assert_each_due_time_once(sends)
    assert dues(sends)[len([s for s in sends if s[0] == "fast"])] > last_by_fast
    assert "read as now" not in caplog.text


def test_two_deployments_with_different_key_prefixes_on_one_database_both_send(memory):
    """Same Celery app name, two elections (two lock items, whose tokens cannot be compared): a row each."""
    sends: list[tuple[str, str, str]] = []
    east = Host("east", memory, sends, key_prefix="east:")
    west = Host("west", memory, sends, key_prefix="west:")
    run(memory, [east, west], 10.0)

    for deployment in ("east", "west"):
        mine = [send for send in sends if send[0] == deployment]
        assert len(mine) >= 9, f"{deployment} stopped sending"
        assert_each_due_time_once(mine)
    assert set(BeatSends.objects.values_list("beat", flat=True)) == {
        "east:celery beat billing",
        "west:celery beat billing",
    }


def test_a_prefixed_deployment_upgraded_starts_from_the_row_it_had_before(memory):
    """Rows were keyed by the name alone: a beat with no row under its key starts from that one's last runs."""
    recorded = (datetime.datetime.fromtimestamp(memory.clock.time(), datetime.UTC)).isoformat()
    beat_sends.advance("celery beat billing", "tick", read=None, new=recorded, token=1)
    assert beat_sends.last_runs("east:celery beat billing", formerly="celery beat billing") == {"tick": recorded}
    # The first send creates the beat's own row from those last runs, under its own token.
    assert (
        beat_sends.advance(
            "east:celery beat billing", "tick", read=recorded, new="later", token=2, formerly="celery beat billing"
        )
        is None
    )
    assert beat_sends.last_runs("east:celery beat billing", formerly="celery beat billing") == {"tick": "later"}
    assert beat_sends.last_runs("celery beat billing") == {"tick": recorded}  # the old row is left as it was
