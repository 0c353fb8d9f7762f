"""The clock-bound takeover rule (``max_clock_skew``) on a fake clock: its edges, and that it is safe within the bound.

A holder stamps each write with its wall clock (``sentAt``, read before sending). A waiter may take
over once that stamp is older than the item's lease plus ``max_clock_skew`` on its own wall clock,
or when the clock-free rule allows it, whichever comes first.
"""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynalock_django.dynamodb import ConfigurationError, LockClient, LockInfo, VirtualClock
from dynalock_django.dynamodb.acquiring.observations import Observations
from dynalock_django.dynamodb.acquiring.plan import Acquisition, Read, Write
from dynalock_django.dynamodb.clock import Instant
from dynalock_django.dynamodb.wire.item import parse_item
from dynalock_django.dynamodb.wire.writes import Stamp

from ..clocks import TICK

pytestmark = pytest.mark.unit

LOCK = ("k", None)
LEASE = 20.0
SKEW = 1.0


def item(*, sent_at: float | None, version: str = "v1", lease: float = LEASE) -> LockInfo:
    return LockInfo(
        key="k",
        sort_key=None,
        owner_name="them",
        lease_duration=lease,
        record_version_number=version,
        fencing_token=7,
        data=None,
        is_released=False,
        acquired_at=None,
        renewed_at=None,
        released_by=None,
        raw_version={"S": version},
        sent_at=sent_at,
    )


def first_sight(clock: VirtualClock, lock: LockInfo, *, max_clock_skew: float | None = SKEW) -> Acquisition:
    """An acquire whose first write was refused by ``lock``, now."""
    acquisition = Acquisition(
        LOCK, Observations(max_clock_skew=max_clock_skew), refresh_period=1.0, deadline=None, jitter=lambda a, b: b
    )
    acquisition.found(lock, Instant.read(clock))
    return acquisition


def takes_over(acquisition: Acquisition, clock: VirtualClock) -> bool:
    step = acquisition.next_step(clock.monotonic())
    assert isinstance(step, Write | Read)
    return isinstance(step, Write) and step.may_take_over


def test_a_stamp_exactly_lease_plus_skew_old_is_taken_over_at_once_with_no_pause(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time() - LEASE - SKEW))
    assert takes_over(acquisition, clock)
    assert acquisition.retry_at_once
    assert acquisition.delay(clock.monotonic()) == 0.0


def test_a_retry_at_once_is_made_even_at_the_deadline_so_timeout_zero_takes_a_dead_lock(clock):
    acquisition = Acquisition(
        LOCK, Observations(max_clock_skew=SKEW), refresh_period=1.0, deadline=clock.monotonic(), jitter=lambda a, b: b
    )
    acquisition.found(item(sent_at=clock.time() - LEASE - SKEW), Instant.read(clock))
    assert acquisition.delay(clock.monotonic()) == 0.0
    assert takes_over(acquisition, clock)
    acquisition.found(item(sent_at=clock.time(), version="v2"), Instant.read(clock))  # someone else was quicker
    assert acquisition.delay(clock.monotonic()) is None


def test_just_inside_the_bound_it_waits_for_the_rest_of_it_and_not_a_tick_less(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time() - LEASE - SKEW + 0.25))
    assert not takes_over(acquisition, clock)
    assert not acquisition.retry_at_once
    clock.advance(0.25 - TICK)
    assert not takes_over(acquisition, clock)
    clock.advance(TICK)
    assert takes_over(acquisition, clock)


def test_a_stamp_one_lease_old_is_not_enough_the_skew_is_added(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time() - LEASE))
    assert not takes_over(acquisition, clock)
    clock.advance(SKEW - TICK)
    assert not takes_over(acquisition, clock)
    clock.advance(TICK)
    assert takes_over(acquisition, clock)


def test_the_waiter_wakes_when_the_bound_is_reached(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time() - LEASE - SKEW + 0.25))
    for _ in range(6):  # backed off to the refresh period
        acquisition.found(item(sent_at=clock.time() - LEASE - SKEW + 0.25), Instant.read(clock))
    assert acquisition.delay(clock.monotonic()) == pytest.approx(0.25 + 0.001)


def test_a_holder_whose_clock_is_behind_by_the_skew_is_taken_over_exactly_when_its_lease_ends():
    # One real time line; the holder's wall clock runs SKEW behind the waiter's (negative skew).
    waiter = VirtualClock(monotonic=500.0, wall=1_700_000_000.0)
    sent_real = waiter.time() - 5.0  # on the waiter's clock, when the holder's last write was sent
    holder_stamp = sent_real - SKEW
    acquisition = first_sight(waiter, item(sent_at=holder_stamp))
    lease_ends = waiter.monotonic() - 5.0 + LEASE  # the holder counts its lease from the moment it sent
    waiter.advance(lease_ends - waiter.monotonic() - TICK)
    assert not takes_over(acquisition, waiter)
    waiter.advance(TICK)
    assert takes_over(acquisition, waiter)


def test_a_holder_whose_clock_is_ahead_by_the_skew_is_taken_over_twice_the_skew_after_its_lease_ends(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time() - LEASE + SKEW))  # sent a lease ago, clock ahead
    clock.advance(2 * SKEW - TICK)
    assert not takes_over(acquisition, clock)
    clock.advance(TICK)
    assert takes_over(acquisition, clock)


def test_a_stamp_from_the_future_falls_back_to_the_clock_free_rule(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time() + 3600.0))
    clock.advance(LEASE - TICK)
    assert not takes_over(acquisition, clock)
    clock.advance(TICK)
    assert takes_over(acquisition, clock)


@pytest.mark.parametrize(("sent_at", "max_clock_skew"), [(None, SKEW), (0.0, None)], ids=["no stamp", "rule off"])
def test_without_a_stamp_or_without_the_option_only_the_clock_free_rule_applies(clock, sent_at, max_clock_skew):
    acquisition = first_sight(clock, item(sent_at=sent_at), max_clock_skew=max_clock_skew)
    assert not takes_over(acquisition, clock)  # a stamp of 0 is 1970: ancient, but the rule is off
    clock.advance(LEASE - TICK)
    assert not takes_over(acquisition, clock)
    clock.advance(TICK)
    assert takes_over(acquisition, clock)


def test_a_renewal_brings_a_fresh_stamp_so_a_live_holder_is_never_taken_over(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time()))
    for n in range(2, 40):
        clock.advance(5.0)  # a heartbeat every period: a new version and a new stamp
        acquisition.found(item(sent_at=clock.time(), version=f"v{n}"), Instant.read(clock))
        assert not takes_over(acquisition, clock)


def test_the_bound_is_worked_out_at_first_sight_so_a_wall_clock_stepped_later_does_not_move_it(clock):
    acquisition = first_sight(clock, item(sent_at=clock.time() - LEASE))
    clock.advance(0.5)
    # NTP steps our wall clock an hour on
    stepped = VirtualClock(monotonic=clock.monotonic(), wall=clock.time() + 3600.0)
    acquisition.found(item(sent_at=clock.time() - LEASE - 0.5), Instant.read(stepped))  # the same version again
    assert not takes_over(acquisition, clock)
    clock.advance(SKEW - 0.5)
    assert takes_over(acquisition, clock)


def test_available_in_says_when_either_rule_allows_it(clock):
    observations = Observations(max_clock_skew=SKEW)
    assert observations.takeover_in(item(sent_at=clock.time() - LEASE - SKEW), Instant.read(clock)) == 0.0
    assert observations.takeover_in(item(sent_at=clock.time() - LEASE), Instant.read(clock)) == SKEW
    assert observations.takeover_in(item(sent_at=clock.time() + 3600.0), Instant.read(clock)) == LEASE
    assert observations.takeover_in(item(sent_at=None), Instant.read(clock)) == LEASE


def stored(version: str = "v1", **extra) -> dict:
    return {
        "key": {"S": "k"},
        "ownerName": {"S": "them"},
        "leaseDuration": {"S": "20000"},
        "recordVersionNumber": {"S": version},
        **extra,
    }


@pytest.mark.parametrize(
    "sent_at",
    [
        {"N": "1700000000000"},  # not a map
        {"M": {"version": {"S": "v1"}}},  # no time
        {"M": {"ms": {"N": "1700000000000"}}},  # no version
        {"M": {"version": {"S": "v0"}, "ms": {"N": "1700000000000"}}},  # another version's stamp
        {"M": {"version": {"S": "v1"}, "ms": {"S": "1700000000000"}}},  # time not a number
        {"M": {"version": {"S": "v1"}, "ms": {"N": "-5"}}},
        {"M": {"version": {"S": "v1"}, "ms": {"N": "1.5e12"}}},
        {"M": {"version": {"S": "v1"}, "ms": {"N": "9" * 40}}},
        {"M": {"version": {"N": "1"}, "ms": {"N": "1700000000000"}}},
        {"M": "garbage"},
        {"L": []},
    ],
)
def test_a_malformed_or_stale_stamp_is_no_stamp(sent_at):
    lock = parse_item(stored(sentAt=sent_at), "key", None)
    assert lock.sent_at is None
    assert not lock.is_malformed  # a bad stamp is not a problem of the lock, just no reason to hurry


def test_a_stamp_of_this_version_is_read_in_seconds_and_an_item_with_problems_has_none():
    good = {"M": {"version": {"S": "v1"}, "ms": {"N": "1700000000250"}}}
    assert parse_item(stored(sentAt=good), "key", None).sent_at == 1_700_000_000.25
    broken = parse_item({**stored(sentAt=good), "leaseDuration": {"S": "soon"}}, "key", None)
    assert broken.is_malformed
    assert broken.sent_at is None


class RecordingClock:
    """A virtual clock that notes which of its two clocks is read, in order; each read moves it a tick."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.reads: list[str] = []

    def monotonic(self) -> float:
        self.reads.append("monotonic")
        self.clock.advance(TICK)
        return self.clock.monotonic()

    def time(self) -> float:
        self.reads.append("time")
        self.clock.advance(TICK)
        return self.clock.time()

    def wait(self, event: threading.Event, timeout: float | None) -> bool:
        return self.clock.wait(event, timeout)


def test_a_writer_reads_its_wall_clock_after_the_moment_its_lease_counts_from():
    clock = RecordingClock()
    stamp = Stamp.new("me", LEASE, clock)
    assert clock.reads == ["monotonic", "time"]
    # On one time line the stamp is never earlier than the start the lease counts from.
    assert stamp.wall_time - (clock.time() - clock.monotonic()) >= stamp.started


def test_a_waiter_reads_its_wall_clock_before_the_monotonic_time_that_dates_it():
    clock = RecordingClock()
    seen = Instant.read(clock)
    assert clock.reads == ["time", "monotonic"]
    assert seen.wall - (clock.time() - clock.monotonic()) <= seen.monotonic


@pytest.mark.parametrize("bad", [-0.001, -1, math.nan, math.inf, True, "1", [1.0]])
def test_max_clock_skew_must_be_none_or_a_finite_number_of_seconds_at_least_zero(bad):
    with pytest.raises(ConfigurationError, match="max_clock_skew must be None or a number of seconds >= 0"):
        LockClient(lambda: None, "locks", max_clock_skew=bad)


@pytest.mark.parametrize("good", [None, 0, 0.5, 2])
def test_max_clock_skew_accepts_none_zero_and_positive_seconds(good):
    with LockClient(lambda: None, "locks", max_clock_skew=good) as client:
        assert client.max_clock_skew == good


# Everything on one real time line (seconds); each clock is real time plus its offset.
offsets = st.floats(min_value=-30.0, max_value=30.0, allow_nan=False)


@given(
    skew=st.floats(min_value=0.0, max_value=10.0),
    holder_offset=offsets,
    waiter_offset=offsets,
    waiter_monotonic_offset=st.floats(min_value=-1e6, max_value=1e6),
    lease=st.floats(min_value=0.1, max_value=120.0),
    sent=st.floats(min_value=0.0, max_value=1000.0),
    seen_after=st.floats(min_value=0.0, max_value=500.0),
)
def test_within_the_bound_a_holder_is_never_taken_over_before_its_lease_ends_and_never_later_than_without_it(
    skew, holder_offset, waiter_offset, waiter_monotonic_offset, lease, sent, seen_after
):
    # Within the bound: the two wall clocks differ by at most ``skew``.
    holder_offset = waiter_offset + max(-skew, min(skew, holder_offset - waiter_offset))
    seen = sent + seen_after  # the waiter reads the item after the write was sent
    observations = Observations(max_clock_skew=skew)
    lock = item(sent_at=sent + holder_offset, lease=lease)
    observations.saw(LOCK, lock, Instant(seen + waiter_offset, seen + waiter_monotonic_offset))
    takeover_real = observations.get(LOCK).takeover_at - waiter_monotonic_offset

    holder_lease_ends = sent + lease  # the holder counts from before it read the stamp it sent
    tolerance = 1e-9 * max(1.0, abs(waiter_monotonic_offset), sent + lease + 100)
    assert takeover_real >= holder_lease_ends - tolerance  # safe
    assert takeover_real <= seen + lease + tolerance  # never slower than the clock-free rule
    assert takeover_real <= holder_lease_ends + 2 * skew + tolerance  # and at most twice the skew late
