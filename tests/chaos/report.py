"""The table the run prints."""

from __future__ import annotations

from .checker import percentiles
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
    "handoff ms p50/p99",
    "errors surfaced",
    "result",
)


def rows(outcomes: list[Outcome]) -> list[tuple[str, ...]]:
    table = []
    for outcome in outcomes:
        verdict, workload = outcome.verdict, outcome.workload
        faults = ", ".join(f"{count} {kind}" for kind, count in sorted(outcome.faults.items())) or "-"
        errors = ", ".join(f"{count} {kind}" for kind, count in sorted(verdict.errors.items())) or "-"
        result = "FAILED" if verdict.violations else ("control: fence needed" if workload.control else "passed")
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
                percentiles(verdict.handoffs),
                errors,
                result,
            )
        )
    return table


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
