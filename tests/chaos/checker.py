"""The properties a history must have, and the figures of the report.

An acknowledged holding runs from ``acquired`` until the first of: the
holder started releasing, was told the lease was lost, was killed — and never
past the last safe time (``safe_until``) the holder recorded: after that the
holder itself does not rely on it.
"""

from __future__ import annotations

import collections
import itertools
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from .history import Event

#  A call may overrun a deadline by the requests in flight (one refused write, one read).
WAIT_SLACK_SECONDS = 1.5
# With a read time-out (a brownout): a call ends by its timeout plus one read time-out (docs/operations.md),
# plus this for the shared machine (processes scheduled late, a slow local store).
BROWNOUT_SLACK_SECONDS = 1.0
# Resuming, then the heartbeat's next check, then one request.
LOST_REPORT_SLACK_SECONDS = 0.5


@dataclass
class Holding:
    worker: str
    key: str
    token: int
    start: float
    end: float
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class ClockBound:
    """Waiters run with ``max_clock_skew`` and every two clocks agree within it."""

    lease: float
    max_clock_skew: float

    @property
    def at_once_after(self) -> float:
        """Seconds after a holder's death from which a waiter arriving takes its lock at once.

        Its last write was sent before it died; it is taken at once when older than the lease plus the
        bound on the waiter's clock, which may run up to the bound ahead of the holder's.
        """
        return self.lease + 2 * self.max_clock_skew


@dataclass
class Verdict:
    operations: int = 0
    overlaps: int = 0
    stale_writes_accepted: int = 0
    lost_updates: int = 0
    phantom_updates: int = 0
    takeovers: list[float] = field(default_factory=list)
    # A waiter that arrived after its holder was killed: (arrival - kill, grant - arrival).
    late_takeovers: list[tuple[float, float]] = field(default_factory=list)
    # The same waiters: (arrival - kill, first sight of the holding they replaced -> their winning write's
    # start, on their own clock), where the history says.
    late_watches: list[tuple[float, float]] = field(default_factory=list)
    handoffs: list[float] = field(default_factory=list)
    # The longest any acquire waited past its timeout (seconds; 0 when none did).
    worst_wait_past_timeout: float = 0.0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    violations: list[tuple[str, list[Event]]] = field(default_factory=list)

    def fail(self, prop: str, excerpt: Iterable[Event]) -> None:
        self.violations.append((prop, sorted(excerpt, key=lambda e: e.t)))


def holdings(events: list[Event]) -> list[Holding]:
    open_: dict[tuple[str, str, int | None], Holding] = {}
    done: list[Holding] = []
    killed_at = {e.data["worker"]: e.t for e in events if e.kind == "killed"}
    for event in events:
        ident = (event.worker, event.key, event.token)
        if event.kind == "acquired":
            open_[ident] = Holding(
                event.worker, event.key, event.token or 0, event.t, event.data["safe_until"], [event]
            )
            continue
        holding = open_.get(ident)
        if holding is None:
            continue
        holding.events.append(event)
        if "safe_until" in event.data:
            holding.end = max(holding.end, event.data["safe_until"])
        if event.kind in ("release_start", "lost_reported"):
            holding.end = min(holding.end, event.t)
            done.append(open_.pop(ident))
    for holding in open_.values():  # never ended: killed, or cut short by the end of the run
        holding.end = min(holding.end, killed_at.get(holding.worker, holding.end))
        done.append(holding)
    return done


def check(
    events: list[Event],
    *,
    heartbeat: float,
    refresh: float,
    control: bool = False,
    overlaps_allowed: bool = False,
    clock_bound: ClockBound | None = None,
    read_timeout: float | None = None,
) -> Verdict:
    """``control``: an unfenced run, whose lost updates are expected (and reported, not failed).

    ``overlaps_allowed``: clocks skewed beyond the bound, where holders may overlap (counted, not
    failed) but the fence must still lose nothing. ``clock_bound``: a waiter arriving late enough
    after its holder was killed takes the lock without watching the holding for a lease (its
    ``acquired`` event's ``watched``: first sight of the holding -> its winning write's start, on its
    clock). ``read_timeout``: every wait
    ends within its timeout plus one read time-out plus BROWNOUT_SLACK_SECONDS.
    """
    verdict = Verdict(operations=sum(1 for e in events if e.kind == "acquired"))
    held = holdings(events)
    _overlaps(held, verdict, overlaps_allowed)
    _writes(events, verdict, control)
    _counters(events, verdict, control)
    _lost_reports(events, heartbeat, verdict)
    _waits(events, verdict, refresh + WAIT_SLACK_SECONDS, read_timeout)
    _timings(events, verdict)
    if clock_bound is not None:
        _late_takeovers(verdict, clock_bound, [e for e in events if e.kind in ("killed", "acquired")])
    verdict.errors.update(e.data["error"] for e in events if e.kind == "error")
    return verdict


def _overlaps(held: list[Holding], verdict: Verdict, allowed: bool) -> None:
    by_key: dict[str, list[Holding]] = collections.defaultdict(list)
    for holding in held:
        by_key[holding.key].append(holding)
    for key_holdings in by_key.values():
        key_holdings.sort(key=lambda h: h.start)
        latest_end: Holding | None = None
        for holding in key_holdings:
            if latest_end is not None and latest_end.end > holding.start and latest_end.worker != holding.worker:
                verdict.overlaps += 1
                if not allowed:
                    verdict.fail("no two holders overlap", latest_end.events + holding.events)
            if latest_end is None or holding.end > latest_end.end:
                latest_end = holding


def _writes(events: list[Event], verdict: Verdict, control: bool) -> None:
    """A write is stale when a newer holder had already claimed (fenced) or read (unfenced) the row: the
    fence must reject it. Accepted writes in commit order (the counter value they wrote) carry
    non-decreasing tokens, never one token shared by two holders."""
    claims: dict[str, list[Event]] = collections.defaultdict(list)
    accepted: dict[str, list[Event]] = collections.defaultdict(list)
    for event in events:
        if event.kind == "claimed":
            claims[event.key].append(event)
        elif event.kind == "write_ok":
            accepted[event.key].append(event)
            newer = [c for c in claims[event.key] if (c.token or 0) > (event.token or 0)]
            if newer:
                verdict.stale_writes_accepted += 1
                if not control:
                    verdict.fail(
                        "a write after a newer holder claimed the row is rejected by the fence", [newer[0], event]
                    )
    for writes in accepted.values():
        writes.sort(key=lambda e: e.data["value"])
        for earlier, later in itertools.pairwise(writes):
            older_token = (later.token or 0) < (earlier.token or 0)
            shared_token = later.token == earlier.token and later.worker != earlier.worker
            if (older_token or shared_token) and not control:
                verdict.fail("accepted tokens strictly increase", [earlier, later])


def _counters(events: list[Event], verdict: Verdict, control: bool) -> None:
    finals = {e.key: e.data["value"] for e in events if e.kind == "final_counter"}
    for key, final in finals.items():
        acked = sum(1 for e in events if e.kind == "write_ok" and e.key == key)
        outcomes = {
            (e.worker, e.token)
            for e in events
            if e.key == key and e.kind in ("write_ok", "write_rejected", "write_failed")
        }
        unknown = sum(
            1 for e in events if e.kind == "write_attempt" and e.key == key and (e.worker, e.token) not in outcomes
        )
        lost = max(0, acked - final)
        phantom = max(0, final - acked - unknown)
        verdict.lost_updates += lost
        verdict.phantom_updates += phantom
        if (lost or phantom) and not control:
            excerpt = [e for e in events if e.key == key and e.kind in ("write_ok", "final_counter")][-6:]
            verdict.fail(f"counter {key} = acknowledged increments ({final} vs {acked}, {unknown} unknown)", excerpt)


def _lost_reports(events: list[Event], heartbeat: float, verdict: Verdict) -> None:
    """A holder paused while another process took its lock over is told so within a heartbeat of resuming.

    (If nobody took it over, the resumed heartbeat may renew it: the lease was never lost.) Only a holder that
    lived a heartbeat past its resume owes the report: one killed sooner (the harness kills workers as a
    workload ends) may die before its heartbeat's first look, and that is no fault of the lock."""
    for pause in (e for e in events if e.kind == "paused"):
        resume = next(
            (e for e in events if e.kind == "resumed" and e.data["worker"] == pause.worker and e.t > pause.t), None
        )
        if resume is None:
            continue
        report_due = resume.t + heartbeat + LOST_REPORT_SLACK_SECONDS
        killed = next(
            (e for e in events if e.kind == "killed" and e.data["worker"] == pause.worker and e.t > resume.t), None
        )
        if killed is not None and killed.t <= report_due:
            continue
        taken = [
            e
            for e in events
            if e.kind == "acquired" and e.key == pause.key and e.worker != pause.worker and pause.t < e.t < resume.t
        ]
        if not taken:
            continue
        told = [e for e in events if e.kind == "lost_reported" and e.worker == pause.worker and e.token == pause.token]
        if not told or told[0].t > report_due:
            verdict.fail(
                "a lease taken over while its holder was paused is reported within a heartbeat of resuming",
                [pause, taken[0], resume, *told[:1]],
            )


def _waits(events: list[Event], verdict: Verdict, overrun: float, read_timeout: float | None) -> None:
    if read_timeout is not None:
        overrun = read_timeout + BROWNOUT_SLACK_SECONDS
    started: dict[tuple[str, str], Event] = {}
    for event in events:
        if event.kind == "acquire_start":
            started[(event.worker, event.key)] = event
        elif event.kind in ("acquired", "acquire_failed"):
            start = started.pop((event.worker, event.key), None)
            if start is None or start.data.get("timeout") is None:
                continue
            past = event.t - start.t - start.data["timeout"]
            verdict.worst_wait_past_timeout = max(verdict.worst_wait_past_timeout, past)
            if past > overrun:
                prop = (
                    "nobody waits longer than its timeout plus a refresh period"
                    if read_timeout is None
                    else "nobody waits longer than its timeout plus one read time-out"
                )
                verdict.fail(prop, [start, event])


def _timings(events: list[Event], verdict: Verdict) -> None:
    """Takeover: a holder killed -> a waiter holds its key; handoff: released -> a waiter holds it.

    Only waiters already waiting when the lock was killed or released count: a key nobody wanted
    for a while measures idleness, not the lock."""
    last_holder: dict[str, Event] = {}
    holding_keys: dict[str, set[str]] = collections.defaultdict(set)  # worker -> the keys it holds now
    waiting_since: dict[tuple[str, str], float] = {}
    for event in events:
        if event.kind == "acquire_start":
            waiting_since[(event.worker, event.key)] = event.t
        elif event.kind == "acquired":
            holding_keys[event.worker].add(event.key)
            previous = last_holder.get(event.key)
            since = waiting_since.pop((event.worker, event.key), event.t)
            if previous is not None and previous.kind == "killed" and since > previous.t:
                verdict.late_takeovers.append((since - previous.t, event.t - since))
                if isinstance(watched := event.data.get("watched"), int | float):
                    verdict.late_watches.append((since - previous.t, float(watched)))
            elif previous is not None and since <= previous.t:
                if previous.kind == "killed":
                    verdict.takeovers.append(event.t - previous.t)
                elif previous.kind == "released" and previous.worker != event.worker:
                    verdict.handoffs.append(event.t - previous.t)
            last_holder[event.key] = event
        elif event.kind == "released":
            last_holder[event.key] = event
            holding_keys[event.worker].discard(event.key)
        elif event.kind == "killed":
            for key in holding_keys.pop(event.data["worker"], set()):
                last_holder[key] = event


def _late_takeovers(verdict: Verdict, bound: ClockBound, excerpt: list[Event]) -> None:
    late = [wait for after_kill, wait in verdict.late_takeovers if after_kill >= bound.at_once_after]
    if not late:
        verdict.fail("a waiter arrives after a killed holder's bound: the run shows the clock-bound rule", excerpt)
    # Judged by the waiter's decision, not by how long its call took: on a loaded machine a waiter that
    # took the lock at once (by the clock bound) may need over a lease of wall time for its requests, yet
    # sends its takeover as soon as it sees the dead holding; the clock-free rule sends it a lease after.
    slow = [watched for after_kill, watched in verdict.late_watches if after_kill >= bound.at_once_after]
    slow = [watched for watched in slow if watched >= bound.lease]
    if slow:
        verdict.fail(
            "a waiter arriving after the bound takes the lock without watching its holding for a lease "
            f"(watched {max(slow):.2f} s)",
            [],
        )


def percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    p99 = statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]
    return f"{statistics.median(values) * 1000:.0f} / {p99 * 1000:.0f}"
