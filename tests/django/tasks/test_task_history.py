"""The task chaos run's checks, on made-up records: each finds what it is for, and nothing else."""

from __future__ import annotations

from typing import Any

from ...chaos.history import Event
from .task_history import (
    LIMITS,
    TaskChaosReport,
    lost_by_the_broker,
    overlaps,
    peak,
    redeliveries,
    skipped_then_killed,
    task_runs,
    token_regressions,
    unaccounted,
    why_unaccounted,
)


def event(t: float, kind: str, key: str = "", token: int | None = None, **data: Any) -> Event:
    return Event(t, "w", kind, key, token, data)


def run(
    t0: float, t1: float | None, name: str, task_id: str, token: int, pid: int = 1, attempt: int = 0
) -> list[Event]:
    found = [event(t0, "start", name, token, id=task_id, attempt=attempt, pid=pid)]
    if t1 is not None:
        found.append(event(t1, "end", name, token, id=task_id, attempt=attempt, pid=pid, outcome="ran"))
    return found


def test_runs_one_after_the_other_are_no_overlap_and_one_inside_another_is():
    apart = run(0, 1, "n", "a", 1) + run(1, 2, "n", "b", 2, pid=2) + run(0.5, 0.7, "other", "c", 3, pid=3)
    assert overlaps(task_runs(apart)) == 0
    inside = run(0, 3, "n", "a", 1) + run(1, 2, "n", "b", 2, pid=2)
    assert overlaps(task_runs(inside)) == 1  # it started after the first but before it ended


def test_a_killed_run_ends_at_its_kill_and_one_never_ended_overlaps_everything_after_it():
    killed = [*run(0, None, "n", "a", 1, pid=7), event(1, "kill", pids=[7]), *run(2, 3, "n", "b", 2, pid=8)]
    runs = task_runs(killed)
    assert [r.outcome for r in runs] == ["killed", "ran"]
    assert runs[0].ended == 1
    assert overlaps(runs) == 0
    never_ended = run(0, None, "n", "a", 1, pid=7) + run(2, 3, "n", "b", 2, pid=8)
    assert overlaps(task_runs(never_ended)) == 1


def test_a_limited_names_runs_overlap_only_past_its_limit():
    assert LIMITS == {"pair": 2}
    two = run(0, 3, "pair", "a", 1) + run(1, 2, "pair", "b", 9, pid=2) + run(2.5, 4, "pair", "c", 2, pid=3)
    assert overlaps(task_runs(two)) == 0
    assert peak(task_runs(two), "pair") == 2
    three = run(0, 3, "pair", "a", 1) + run(1, 2.6, "pair", "b", 9, pid=2) + run(2.5, 4, "pair", "c", 2, pid=3)
    assert overlaps(task_runs(three)) == 1  # c started while a and b both ran
    assert peak(task_runs(three), "pair") == 3
    assert token_regressions(task_runs(two)) == 0  # each permit has its own tokens: not ordered across permits


def test_tokens_must_grow_in_the_order_the_runs_started():
    assert token_regressions(task_runs(run(0, 1, "n", "a", 5) + run(2, 3, "n", "b", 6, pid=2))) == 0
    assert token_regressions(task_runs(run(0, 1, "n", "a", 5) + run(2, 3, "n", "b", 5, pid=2))) == 1


def test_every_enqueued_copy_must_have_run_or_skipped_or_be_replaced_by_one_that_did():
    events = [
        event(0, "enqueued", "n", id="ran"),
        event(0, "enqueued", "n", id="skipped"),
        event(0, "enqueued", "n", id="killed"),
        event(0, "enqueued", "n", id="lost"),
        event(0, "enqueued", "n", id="probe", probe=True),
        event(1, "enqueued", "n", id="again", replaces="killed"),
        *run(1, 2, "n", "ran", 1),
        event(2, "skip", "chaos n", id="skipped"),
        *run(3, 4, "n", "again", 2, pid=2),
    ]
    assert unaccounted(events) == ["lost"]
    retried_only = [event(0, "enqueued", "n", id="r"), *run(1, 2, "n", "r", 1)]
    retried_only[-1].data["outcome"] = "retry"  # a first attempt that failed is not an outcome
    assert unaccounted(retried_only) == ["r"]


def test_a_missing_copy_is_told_by_what_it_last_raised_or_whether_a_worker_began_it():
    events = [
        *(event(0, "enqueued", "n", id=task_id) for task_id in ("down", "retried", "lost", "begun", "queued")),
        event(1, "failed", id="down", error="DynamoDBUnavailable", final=True),
        event(1, "failed", id="retried", error="Flaky", final=False),
        event(2, "failed", id="retried", error="DynamoDBUnavailable", final=True),
        event(1, "failed", id="lost", error="Flaky", final=False),  # its retry was queued, and never ran
        event(1, "begin", id="begun", attempt=0),
    ]
    missing = unaccounted(events)
    assert missing == ["down", "retried", "lost", "begun", "queued"]
    assert why_unaccounted(events, missing) == {
        "raised DynamoDBUnavailable": 2,
        "raised Flaky, its retry never ran": 1,
        "begun, no outcome": 1,
        "never begun": 1,
    }
    report = TaskChaosReport.of("celery", 1.0, events, stuck_keys=[])
    # A copy whose last attempt raised because DynamoDB did not answer failed visibly: not lost, but counted.
    assert report.raised_unanswered == ["down", "retried"]
    assert without_last_kill(report.failures()) == [
        "3 enqueued copies neither ran nor skipped "
        "(begun, no outcome: 1, never begun: 1, raised Flaky, its retry never ran: 1): ['lost', 'begun', 'queued']",
        "2 of 5 copies raised, DynamoDB not answering: more than 10%, too few answered to prove the run-once rule",
    ]


def without_last_kill(failures: list[str]) -> list[str]:
    """The failures but the harness's own (these histories have no last kill, so the stuck-key check has no run)."""
    return [failure for failure in failures if "the stuck-key check proves nothing" not in failure]


def test_a_few_copies_raising_for_an_unanswering_dynamodb_are_counted_and_many_fail_the_run():
    ran = [event(0, "enqueued", "n", id=f"r{index}") for index in range(19)]
    ran += [record for index in range(19) for record in run(1 + index, 1.5 + index, "n", f"r{index}", index + 1)]
    one_down = [
        *ran,
        event(0, "enqueued", "n", id="down"),
        event(30, "failed", id="down", error="CircuitOpen", final=True),
    ]
    report = TaskChaosReport.of("db_worker", 1.0, one_down, stuck_keys=[])
    assert (report.unaccounted, report.raised_unanswered, without_last_kill(report.failures())) == ([], ["down"], [])
    assert report.row()["raised, DynamoDB not answering"] == "1"
    three_down = [
        *one_down,
        *(event(0, "enqueued", "n", id=f"down{index}") for index in range(2)),
        *(event(30, "failed", id=f"down{index}", error="DynamoDBUnavailable", final=True) for index in range(2)),
    ]
    assert without_last_kill(TaskChaosReport.of("db_worker", 1.0, three_down, stuck_keys=[]).failures()) == [
        "3 of 22 copies raised, DynamoDB not answering: more than 10%, too few answered to prove the run-once rule"
    ]


def test_a_copy_no_worker_received_before_a_whole_worker_was_killed_is_the_brokers_loss_and_no_other_is():
    events = [
        *(event(0, "enqueued", "n", id=task_id) for task_id in ("lost", "held", "done")),
        event(0.5, "received", id="held"),  # a worker had it: its loss is a failure
        event(0.5, "received", id="done"),
        *run(1, 2, "n", "done", 1),
        event(3, "kill", pids=[7, 8], worker=True),
        event(4, "enqueued", "n", id="late"),  # enqueued after the only whole-worker kill
    ]
    missing = unaccounted(events)
    assert missing == ["lost", "held", "late"]
    assert lost_by_the_broker(events, missing) == ["lost"]
    report = TaskChaosReport.of("celery", 1.0, events, stuck_keys=[])
    assert (report.unaccounted, report.lost_by_broker) == (["held", "late"], ["lost"])
    assert report.row()["lost by the broker (never received)"] == "1"
    assert report.failures()[0] == "2 enqueued copies neither ran nor skipped (never begun: 2): ['held', 'late']"
    # A framework whose workers say nothing of what they receive: every missing copy is unaccounted.
    silent = [e for e in events if e.kind != "received"]
    assert lost_by_the_broker(silent, unaccounted(silent)) is None
    assert TaskChaosReport.of("huey", 1.0, silent, stuck_keys=[]).row()["lost by the broker (never received)"] == "-"


def test_redeliveries_count_copies_begun_again_and_operators_new_copies():
    events = [
        event(0, "begin", id="a", attempt=0),
        event(1, "begin", id="a", attempt=0),  # handed out again
        event(2, "begin", id="a", attempt=1),  # a retry: not a redelivery
        event(3, "enqueued", "n", id="b", replaces="c"),
    ]
    assert redeliveries(events) == 2


def test_the_report_names_each_broken_property_and_leaves_the_last_kills_probes_out():
    events = [
        event(0, "enqueued", "n", id="a"),
        event(0, "enqueued", "n", id="p", probe=True),
        *run(0, 3, "n", "a", 2),
        *run(1, 2, "n", "x", 1, pid=2),
        *run(4, None, "n", "p", 3, pid=3),
        event(5, "kill", pids=[3], worker=True, last=True),
        event(5.1, "dead"),
    ]
    report = TaskChaosReport.of("celery", 1.0, events, stuck_keys=["chaos n"])
    assert report.killed_runs == 0
    assert report.kills == 0
    assert report.failures() == [
        "1 runs overlapped a run of the same key",
        "1 runs had a fencing token not above the run before",
        "1 keys still held two leases after the last worker died",
    ]


def test_a_skip_before_the_copys_own_run_was_killed_is_told_apart():
    events = [
        event(0, "enqueued", "n", id="x"),
        *run(0, None, "n", "x", 1, pid=7),  # the first copy runs long
        event(1, "skip", "chaos n", id="x"),  # handed out again, it skips while the first runs
        event(2, "kill", pids=[7]),  # then the first is killed: nothing runs it again
    ]
    assert unaccounted(events) == []  # the skip was visible
    assert skipped_then_killed(events) == ["x"]  # but nobody finished the work
    assert skipped_then_killed([*events, event(4, "skip", "chaos n", id="x")]) == []  # a later delivery skipped
    assert skipped_then_killed([*events, *run(4, 5, "n", "x", 2, pid=8)]) == []  # or ran


def test_the_probes_count_as_neither_skips_nor_redeliveries_and_each_name_must_be_held_at_the_last_kill():
    events = [
        event(0, "enqueued", "n", id="a"),
        event(0, "enqueued", "m", id="b"),
        *run(0, 1, "n", "a", 1),
        *run(0, 1, "m", "b", 2, pid=2),
        event(2, "enqueued", "n", id="p", probe=True),
        event(2, "begin", id="p", attempt=0),
        event(3, "begin", id="p", attempt=0),  # a probe outlives the visibility timeout
        event(3, "skip", "chaos n", id="p"),
        *run(2, None, "n", "p", 3, pid=3),
        event(5, "kill", pids=[3], worker=True, last=True),
    ]
    report = TaskChaosReport.of("celery", 1.0, events, stuck_keys=[])
    assert (report.skips, report.redeliveries) == (0, 0)
    assert report.unheld_at_last_kill == ["m"]
    assert report.failures() == ["no run held ['m'] when the last workers died: the stuck-key check proves nothing"]
