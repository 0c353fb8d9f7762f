"""The table the run prints."""

from __future__ import annotations

from ..dynamodb_support import LEASE
from .checker import ClockBound, percentiles
from .workloads import Outcome

HEADER = (
    "workload",
    "procs",
    "ops",
    "faults injected",
    "overlaps",
    "stale writes accepted",
    "lost updates",
    "takeover after kill ms p50/p99",
    "late waiter -> takeover ms p50/p99",
    "handoff ms p50/p99",
    "worst wait past timeout s",
    "errors surfaced",
    "result",
)


def rows(outcomes: list[Outcome]) -> list[tuple[str, ...]]:
    table = []
    for outcome in outcomes:
        verdict, workload = outcome.verdict, outcome.workload
        faults = ", ".join(f"{count} {kind}" for kind, count in sorted(outcome.faults.items())) or "-"
        errors = ", ".join(f"{count} {kind}" for kind, count in sorted(verdict.errors.items())) or "-"
        result = _result(outcome)
        table.append(
            (
                workload.name,
                str(workload.processes),
                str(verdict.operations),
                faults,
                str(verdict.overlaps),
                str(verdict.stale_writes_accepted),
                str(verdict.lost_updates),
                percentiles(verdict.takeovers),
                percentiles(_late_waits(outcome)),
                percentiles(verdict.handoffs),
                f"{verdict.worst_wait_past_timeout:.2f}",
                errors,
                result,
            )
        )
    return table


def _late_waits(outcome: Outcome) -> list[float]:
    """Arrival to grant, for waiters that arrived once a killed holder's lock was free to take: by the clock
    bound when the workload has one (then at once), else a lease after the kill (then after a lease)."""
    bound = ClockBound(LEASE, outcome.workload.max_clock_skew or 0.0)
    return [wait for after_kill, wait in outcome.verdict.late_takeovers if after_kill >= bound.at_once_after]


def _result(outcome: Outcome) -> str:
    verdict, workload = outcome.verdict, outcome.workload
    if verdict.violations:
        return "FAILED"
    if workload.control:
        return "control: fence needed"
    if workload.overlaps_allowed:  # the fence held, or the checker would have failed it
        return f"control: {verdict.overlaps} overlaps, fence held" if verdict.overlaps else "control: no overlap"
    return "passed"


def render(outcomes: list[Outcome]) -> str:
    body = rows(outcomes)
    widths = [max(len(row[i]) for row in [HEADER, *body]) for i in range(len(HEADER))]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in [HEADER, *body]]
    lines.insert(1, "-|-".join("-" * width for width in widths))
    return "\n".join(lines)


def failures(outcomes: list[Outcome]) -> str:
    out = []
    for outcome in outcomes:
        for prop, excerpt in outcome.verdict.violations:
            out.append(f"\n{outcome.workload.name}: property violated: {prop}")
            out.extend(f"    {event}" for event in excerpt[:20])
    return "\n".join(out)
