"""The Django layer's own counters, when ``opentelemetry-api`` is installed; else nothing.

The protocol's (dynalock_django.dynamodb.telemetry) measure locks; these count what only the Django
layer does: run-once tasks' skipped runs and requests an idempotency key answered. Same meter,
``dynalock_django``; docs/operations.md lists them.
"""

from __future__ import annotations

try:
    from opentelemetry import metrics
except ImportError:  # the extra is not installed: everything below is a no-op
    metrics = None  # type: ignore[assignment]

ENABLED = metrics is not None

# Requests with an idempotency key answered without running their work, by outcome: (instrument, description).
IDEMPOTENCY_OUTCOMES = {
    "replays": ("dynalock.idempotency.replays", "Requests answered with the stored result of their key's first run."),
    "conflicts": ("dynalock.idempotency.conflicts", "Requests refused while their key's first run was in flight."),
    "mismatches": ("dynalock.idempotency.mismatches", "Requests refused: their key was used for other work."),
}

if ENABLED:
    _meter = metrics.get_meter("dynalock_django")
    _tasks_skipped = _meter.create_counter(
        "dynalock.tasks.skipped", unit="{run}", description="Run-once task runs skipped: another run held the key."
    )
    _idempotency = {
        outcome: _meter.create_counter(name, unit="{request}", description=text)
        for outcome, (name, text) in IDEMPOTENCY_OUTCOMES.items()
    }


def task_skipped(task: str) -> None:
    """A run-once task's run was skipped: another run held its key."""
    if ENABLED:
        _tasks_skipped.add(1, {"dynalock.task": task})


def idempotency_answered(outcome: str) -> None:
    """A request with an idempotency key was answered without running: ``outcome`` is a key of IDEMPOTENCY_OUTCOMES."""
    if ENABLED:
        _idempotency[outcome].add(1)
