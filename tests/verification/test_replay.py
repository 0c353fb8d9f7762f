"""The model and the code decide alike: spin's random simulations of verification/lock.pml, replayed through
the package's decision functions on fake clocks.

Each simulation (``spin -DREPLAY -u<steps> -n<seed>``) prints every decision of every client with the
reading of that client's own clock: when it started an acquire, what each read or refused write showed,
whether it wrote (and whether that write took over) or read, which answers were lost, when a grant's lease
started, when a renewal landed, and whether the holder believed its lease by its clock. Each client here
has its own :class:`VirtualClock`, :class:`Observations` and :class:`Acquisition`, told the same things at
the same readings, and must decide the same: "client 0 saw version v unchanged for a lease on its clock:
the plan takes it over"; "a lease ran, on the holder's clock, from the start of the write that won it".
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dynalock_django.dynamodb import LockInfo, VirtualClock
from dynalock_django.dynamodb.acquiring.observations import Observations
from dynalock_django.dynamodb.acquiring.plan import Acquisition, Read, Write
from dynalock_django.dynamodb.clock import Instant
from dynalock_django.dynamodb.leases.lease_record import LeaseRecord

from ..dynamodb.clocks import move_to

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(
        shutil.which("spin") is None,
        reason="spin is not installed: `apt-get install spin` (Debian) to replay the model",
    ),
]

MODEL = Path(__file__).resolve().parents[2] / "verification" / "lock.pml"
LOCK = ("k", None)
# The model's lease and belief margin, in ticks (lock.pml's L and MARGIN, which is its DRIFT).
LEASE = 3
MARGIN = 1
SEEDS = range(1, 13)
STEPS = 2500
EVENT = re.compile(r"^\s*EV (\d+) ([A-Z]+)((?: -?\d+)*)\s*$")


def simulate(seed: int, *defines: str) -> list[tuple[int, str, list[int]]]:
    done = subprocess.run(
        ["spin", "-DREPLAY", *defines, f"-u{STEPS}", f"-n{seed}", MODEL.name],
        cwd=MODEL.parent,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    events = []
    for line in done.stdout.splitlines():
        match = EVENT.match(line)
        if match:
            events.append((int(match[1]), match[2], [int(arg) for arg in match[3].split()]))
    return events


def item(version: str, owner: str) -> LockInfo:
    return LockInfo(
        key="k",
        sort_key=None,
        owner_name=owner,
        lease_duration=float(LEASE),
        record_version_number=version,
        fencing_token=1,
        data=None,
        is_released=False,
        acquired_at=None,
        renewed_at=None,
        released_by=None,
        raw_version={"S": version},
    )


@dataclass
class Client:
    """One model client's twin: its clock, what it has seen, its acquire, its lease."""

    name: str
    clock: VirtualClock = field(default_factory=lambda: VirtualClock(monotonic=0.0))
    observations: Observations = field(default_factory=Observations)
    acquisition: Acquisition | None = None
    lease: LeaseRecord | None = None
    last: str = ""

    def at(self, tick: int) -> VirtualClock:
        move_to(self.clock, float(tick))
        return self.clock

    def plan(self) -> Acquisition:
        assert self.acquisition is not None, f"{self.name} decides outside an acquire"
        return self.acquisition


@dataclass
class Replay:
    clients: dict[int, Client] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)  # the model's version numbers (reused) -> unique names
    owners: dict[str, str] = field(default_factory=dict)  # version -> the client that wrote it
    started: dict[str, float] = field(default_factory=dict)  # version -> when its write started, writer's clock
    counts: dict[str, int] = field(default_factory=dict)

    def client(self, number: int) -> Client:
        return self.clients.setdefault(number, Client(f"c{number}"))

    def apply(self, number: int, what: str, args: list[int]) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1
        me = self.client(number)
        if what == "NEWV":
            self.names[args[0]] = name = f"v{len(self.owners)}"
            self.owners[name] = me.name
            return
        tick = args[-1]
        clock = me.at(tick)
        if what == "START":
            me.acquisition = Acquisition(LOCK, me.observations, refresh_period=1.0, deadline=None)
        elif what == "READ":  # held, and its version has not stood a lease on our clock: read
            assert me.plan().next_step(clock.monotonic()) == Read(), f"{me.name} at {tick}: the model reads"
        elif what == "WRITE":  # plan.Acquisition.next_step: write, taking over or not
            version, take = self.names[args[0]], bool(args[1])
            step = me.plan().next_step(clock.monotonic())
            assert isinstance(step, Write), f"{me.name} at {tick}: the model writes, the plan says {step}"
            assert step.may_take_over == take, f"{me.name} at {tick}: the model's takeover decision is {take}"
            self.started[version] = clock.monotonic()
            if take:
                self.counts["TAKEOVER"] = self.counts.get("TAKEOVER", 0) + 1
        elif what == "LOST":
            version = self.names[args[0]]
            me.plan().unanswered.add(version, self.started[version])
        elif what == "SEEN":  # a read or a refusal showed the lock held at this version
            version = self.names[args[0]]
            me.plan().found(item(version, self.owners[version]), Instant.read(clock))
        elif what == "FREE":
            me.plan().found(None, Instant.read(clock))
            # The model forgets what it watched once the lock is free (fewer states); the write that follows
            # takes a free lock whatever it watched.
            me.observations.forget(LOCK)
        elif what == "RESOLVE":  # the read that stands for MAX_UNANSWERED lost answers: no step to compare
            pass
        elif what == "GRANT":
            self.grant(me, self.names[args[0]], age=args[1], tick=tick)
        elif what == "RENEWED":  # LeaseRecord.renewed: the lease counts from the renewal's start
            assert me.lease is not None
            me.lease.renewed(self.names[args[0]], clock.monotonic() - args[1], float(LEASE))
        elif what == "BELIEVES":  # LeaseRecord.remaining() on the holder's clock, beyond the drift margin
            assert me.lease is not None
            assert (me.lease.remaining() > MARGIN) == bool(args[0]), f"{me.name} at {tick}: believes={args[0]}"
        else:
            raise AssertionError(f"an event the replay does not know: {what}")
        me.last = what

    def grant(self, me: Client, version: str, *, age: int, tick: int) -> None:
        if me.last == "RESOLVE":  # a lost answer's write found landed: it counts from when that write started
            started = me.plan().unanswered.landed_in(item(version, me.name), me.name)
            assert started is not None, f"{me.name} at {tick}: the model found its write {version} landed"
        else:  # the write answered: acquirer.Acquirer._write grants from stamp.started
            started = self.started[version]
        # The model counts ages up to a lease only: past it, no rule looks further.
        assert min(tick - started, LEASE) == age, f"{me.name} at {tick}: its lease started {age} ticks ago"
        me.lease = LeaseRecord(
            me.clock,
            key="k",
            sort_key=None,
            owner_name=me.name,
            version=version,
            fencing_token=1,
            data=None,
            lease_duration=float(LEASE),
            valid_from=started,
            acquired_at=None,
            keep_alive=True,
        )
        me.acquisition = None


def replay(seed: int, *defines: str) -> dict[str, int]:
    """Replay one simulation; the count of each kind of event."""
    replayed = Replay()
    for number, what, args in simulate(seed, *defines):
        try:
            replayed.apply(number, what, args)
        except AssertionError as error:
            raise AssertionError(f"seed {seed}: {error}") from error
    return replayed.counts


def test_spins_simulations_decide_as_the_package_does():
    totals: dict[str, int] = {}
    for seed in SEEDS:
        for what, count in replay(seed).items():
            totals[what] = totals.get(what, 0) + count
    # The simulations reached every kind of decision, takeovers and lost answers included.
    kinds = {"START", "READ", "WRITE", "TAKEOVER", "SEEN", "FREE", "GRANT", "RENEWED", "BELIEVES", "LOST", "RESOLVE"}
    assert kinds <= set(totals), totals


def test_a_model_that_drifts_from_the_code_fails_the_replay():
    """The model with one of its bug switches (a lease counted from the answer) no longer decides as the code."""
    with pytest.raises(AssertionError, match="its lease started"):
        for seed in SEEDS:
            replay(seed, "-DBUG_LEASE_FROM_ANSWER")
