"""What a task chaos run's records say: its runs, and the properties read from them.

The events (tests/chaos/history.py) come from the workers (tests/django/tasks/chaos_jobs.py) and from
the driver, which records what it enqueued (``enqueued``: the copy's id, and ``replaces`` when it is
an operator's new copy of a killed one), what it killed (``kill``: the process ids, ``worker`` when a
whole worker) and when the last worker died (``dead``). Every time is the host's monotonic clock.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ...chaos.history import Event

# Names whose task runs with ``@lock_task(limit=N)``: N runs at once are no overlap (chaos_jobs.py).
LIMITS = {"pair": 2}


@dataclass(frozen=True)
class TaskRun:
    """One run of a chaos task: from its ``start`` (inside the lock) to its ``end``, or to its process's kill."""

    name: str
    task_id: str
    attempt: int
    pid: int
    token: int | None
    started: float
    ended: float | None  # None: it never ended (a run still going when the records were read)
    outcome: str  # "ran", "retry" (a first attempt that failed), "killed" or "unfinished"


def task_runs(events: list[Event]) -> list[TaskRun]:
    ends = {(e.data["id"], e.data["attempt"], e.data["pid"], e.token): e for e in events if e.kind == "end"}
    kills = sorted((e.t, pid) for e in events if e.kind == "kill" for pid in e.data["pids"])
    runs = []
    for start in (e for e in events if e.kind == "start"):
        pid = start.data["pid"]
        end = ends.get((start.data["id"], start.data["attempt"], pid, start.token))
        killed = next((t for t, dead in kills if dead == pid and t >= start.t), None)
        if end is not None:
            ended, outcome = end.t, end.data["outcome"]
        elif killed is not None:
            ended, outcome = killed, "killed"
        else:
            ended, outcome = None, "unfinished"
        runs.append(
            TaskRun(start.key, start.data["id"], start.data["attempt"], pid, start.token, start.t, ended, outcome)
        )
    return sorted(runs, key=lambda run: run.started)


def overlaps(runs: list[TaskRun]) -> int:
    """Runs that started while as many earlier runs of the same name as its limit (1, or LIMITS) had not ended
    (a run that never ended never does)."""
    return sum(
        1
        for name, same in _by_name(runs).items()
        for index, run in enumerate(same)
        if _going(same[:index], run.started) >= LIMITS.get(name, 1)
    )


def peak(runs: list[TaskRun], name: str) -> int:
    """The most runs of ``name`` going at once."""
    same = _by_name(runs).get(name, [])
    return max((_going(same[:index], run.started) + 1 for index, run in enumerate(same)), default=0)


def _going(earlier: list[TaskRun], moment: float) -> int:
    return sum(1 for run in earlier if run.ended is None or run.ended > moment)


def token_regressions(runs: list[TaskRun]) -> int:
    """Runs whose fencing token is not greater than that of the run of the same name that started before.

    A limited name's runs hold N permits, each with its own tokens: only that each run has one is checked.
    """
    return sum(
        1
        for name, same in _by_name(runs).items()
        for before, after in itertools.pairwise(same)
        if before.token is None or after.token is None or (name not in LIMITS and after.token <= before.token)
    )


def unaccounted(events: list[Event]) -> list[str]:
    """Enqueued copies (not the last workers' probes) that neither ran to the end nor skipped visibly.

    A killed copy counts when the copy an operator enqueued in its place (``replaces``) is accounted for.
    """
    done = {e.data["id"] for e in events if (e.kind == "end" and e.data["outcome"] == "ran") or e.kind == "skip"}
    replaced_by = {e.data["replaces"]: e.data["id"] for e in events if e.kind == "enqueued" and e.data.get("replaces")}

    def accounted(task_id: str) -> bool:
        seen = set()
        while task_id not in done and task_id in replaced_by and task_id not in seen:
            seen.add(task_id)
            task_id = replaced_by[task_id]
        return task_id in done

    return [task_id for task_id in enqueued_ids(events) if not accounted(task_id)]


def lost_by_the_broker(events: list[Event], missing: list[str]) -> list[str] | None:
    """The copies in ``missing`` no worker ever received, each enqueued before a whole worker was killed, in a
    run whose workers record what they receive (Celery's: ``received``).

    kombu's Redis transport takes a message from the queue (BRPOP) and only then writes it to its
    unacknowledged set: a worker SIGKILLed between the two (the answer may wait in its socket) loses the
    message with nobody's code run (kombu#305, celery#4354). No lock can run or skip a copy that never
    reached a worker; the run counts these apart from the copies a worker received and lost.
    """
    received = {e.data["id"] for e in events if e.kind == "received"}
    if not received:
        return None  # this framework's workers do not say what they receive: none can be told apart
    enqueued_at = {e.data["id"]: e.t for e in events if e.kind == "enqueued"}
    worker_kills = [e.t for e in events if e.kind == "kill" and e.data.get("worker") and not e.data.get("last")]
    return [
        task_id
        for task_id in missing
        if task_id not in received and any(killed > enqueued_at[task_id] for killed in worker_kills)
    ]


# What the protocol raises when DynamoDB does not answer in time: a copy that raised it failed visibly, by its deadline
# (docs/guarantees.md, "A bad day"), which a loaded CI core's local endpoint does now and then to a short lease.
STORE_UNANSWERED = ("DynamoDBUnavailable", "CircuitOpen")
# At most this share of the copies may fail so: a run where DynamoDB answers too few proves too little.
MOST_UNANSWERED_SHARE = 0.1


def raised_unanswered(events: list[Event], missing: list[str]) -> list[str]:
    """The copies in ``missing`` whose last attempt raised because DynamoDB did not answer, with no retry to come.

    Not lost: the task failed where its queue shows failures, as a call that cannot reach DynamoDB must.
    """
    last_failure = {e.data["id"]: e.data for e in events if e.kind == "failed"}
    return [
        task_id
        for task_id in missing
        if (failure := last_failure.get(task_id)) is not None
        and failure["error"] in STORE_UNANSWERED
        and failure.get("final", True)
    ]


def why_unaccounted(events: list[Event], missing: list[str]) -> dict[str, int]:
    """For the copies in ``missing``, how many ended each way: the error a copy last raised (and whether
    a retry was still to come), begun with no outcome, or never begun."""
    last_failure = {e.data["id"]: e.data for e in events if e.kind == "failed"}
    begun = {e.data["id"] for e in events if e.kind in ("begin", "start", "failed")}

    def why(task_id: str) -> str:
        if task_id in last_failure:
            failure = last_failure[task_id]
            return f"raised {failure['error']}" + ("" if failure.get("final", True) else ", its retry never ran")
        return "begun, no outcome" if task_id in begun else "never begun"

    return dict(Counter(why(task_id) for task_id in missing))


def skipped_then_killed(events: list[Event]) -> list[str]:
    """Copies whose only outcome is a skip that came before their own run was killed.

    The broker handed a long copy out again; the second delivery met the first's live lease and
    skipped, which acknowledged the message; then the first was killed, and nothing runs it again.
    Accounted for (the skip was visible), but nobody finished the work: the visibility timeout was
    shorter than the task.
    """
    killed_at: dict[str, float] = {}
    for run in task_runs(events):
        if run.outcome == "killed" and run.ended is not None:
            killed_at[run.task_id] = max(run.ended, killed_at.get(run.task_id, float("-inf")))
    ran = {e.data["id"] for e in events if e.kind == "end" and e.data["outcome"] == "ran"}
    skips: dict[str, list[float]] = defaultdict(list)
    for e in events:
        if e.kind == "skip":
            skips[e.data["id"]].append(e.t)
    return sorted(
        task_id
        for task_id, when in skips.items()
        if task_id in killed_at and task_id not in ran and max(when) < killed_at[task_id]
    )


def enqueued_ids(events: list[Event], *, probes: bool = False) -> list[str]:
    """The copies the storm enqueued; with ``probes``, the last kill's probes instead."""
    return [e.data["id"] for e in events if e.kind == "enqueued" and bool(e.data.get("probe")) == probes]


def redeliveries(events: list[Event]) -> int:
    """Copies a broker handed out again (the same id and attempt begun more than once), plus operators' new copies.

    Not the probes': they run until the last kill, past the visibility timeout, and are handed out again.
    """
    probes = set(enqueued_ids(events, probes=True))
    begun = Counter(
        (e.data["id"], e.data["attempt"]) for e in events if e.kind == "begin" and e.data["id"] not in probes
    )
    replaced = sum(1 for e in events if e.kind == "enqueued" and e.data.get("replaces"))
    return sum(count - 1 for count in begun.values()) + replaced


def freed_after(runs: list[TaskRun], lease: float) -> list[float]:
    """For each killed run that a later run of its name followed: the time from the kill to that run, in leases."""
    found = []
    for same in _by_name(runs).values():
        for killed in (run for run in same if run.outcome == "killed" and run.ended is not None):
            following = [run.started for run in same if run.started > killed.ended]
            if following:
                found.append((min(following) - killed.ended) / lease)
    return found


@dataclass
class TaskChaosReport:
    framework: str
    lease: float
    enqueued: int = 0
    runs: int = 0
    skips: int = 0
    retries: int = 0
    killed_runs: int = 0
    kills: int = 0
    worker_kills: int = 0
    redeliveries: int = 0
    overlaps: int = 0
    token_regressions: int = 0
    unfinished: int = 0
    lost_leases: int = 0
    unaccounted: list[str] = field(default_factory=list)
    lost_by_broker: list[str] | None = None  # see lost_by_the_broker(); None: its workers record no receipts
    why_unaccounted: dict[str, int] = field(default_factory=dict)  # see why_unaccounted()
    raised_unanswered: list[str] = field(default_factory=list)  # see raised_unanswered()
    stuck_keys: list[str] = field(default_factory=list)
    freed_after: list[float] = field(default_factory=list)  # leases, each killed run's key
    last_freed_after: float | None = None  # leases after the last worker died, the slowest key
    unheld_at_last_kill: list[str] = field(default_factory=list)  # names no run held when the last workers died
    skipped_then_killed: list[str] = field(default_factory=list)  # see skipped_then_killed()
    limited_peak: dict[str, int] = field(default_factory=dict)  # the most runs of each LIMITS name at once
    seconds: float | None = None  # the whole run's, from its workers' start to the last keys' check

    @classmethod
    def of(cls, framework: str, lease: float, events: list[Event], stuck_keys: list[str]) -> TaskChaosReport:
        # The probes a driver leaves running for the last kill are runs too: their overlaps count.
        runs = task_runs(events)
        finished = [run for run in runs if run.outcome != "unfinished"]
        last_kill = {e.t for e in events if e.kind == "kill" and e.data.get("last")}
        killed_last = [run for run in runs if run.outcome == "killed" and run.ended in last_kill]
        probes = set(enqueued_ids(events, probes=True))
        names = {e.key for e in events if e.kind == "enqueued"}
        missing = unaccounted(events)
        lost = lost_by_the_broker(events, missing)
        missing = [task_id for task_id in missing if task_id not in (lost or [])]
        unanswered = raised_unanswered(events, missing)
        missing = [task_id for task_id in missing if task_id not in unanswered]
        return cls(
            framework=framework,
            lease=lease,
            enqueued=sum(1 for e in events if e.kind == "enqueued" and not e.data.get("probe")),
            runs=sum(1 for run in finished if run.outcome == "ran"),
            skips=sum(1 for e in events if e.kind == "skip" and e.data["id"] not in probes),
            retries=sum(1 for run in finished if run.outcome == "retry"),
            killed_runs=sum(1 for run in runs if run.outcome == "killed") - len(killed_last),
            kills=sum(1 for e in events if e.kind == "kill" and not e.data.get("last")),
            worker_kills=sum(1 for e in events if e.kind == "kill" and e.data.get("worker") and not e.data.get("last")),
            redeliveries=redeliveries(events),
            overlaps=overlaps(runs),
            token_regressions=token_regressions(runs),
            unfinished=len(runs) - len(finished),
            lost_leases=sum(1 for e in events if e.kind == "lost"),
            unaccounted=missing,
            lost_by_broker=lost,
            why_unaccounted=why_unaccounted(events, missing),
            raised_unanswered=unanswered,
            stuck_keys=stuck_keys,
            freed_after=freed_after(runs, lease),
            unheld_at_last_kill=sorted(names - {run.name for run in killed_last}),
            skipped_then_killed=skipped_then_killed(events),
            limited_peak={name: peak(runs, name) for name in sorted(names & set(LIMITS))},
        )

    def failures(self) -> list[str]:
        """Each property the run broke, in words; empty when it held."""
        found = []
        if self.overlaps:
            cause = f" ({self.lost_leases} leases were lost: renewals late under load?)" if self.lost_leases else ""
            found.append(f"{self.overlaps} runs overlapped a run of the same key{cause}")
        if self.token_regressions:
            found.append(f"{self.token_regressions} runs had a fencing token not above the run before")
        if self.unaccounted:
            why = ", ".join(f"{how}: {count}" for how, count in sorted(self.why_unaccounted.items()))
            found.append(
                f"{len(self.unaccounted)} enqueued copies neither ran nor skipped ({why}): {self.unaccounted[:5]}"
            )
        if len(self.raised_unanswered) > MOST_UNANSWERED_SHARE * self.enqueued:
            found.append(
                f"{len(self.raised_unanswered)} of {self.enqueued} copies raised, DynamoDB not answering: more than "
                f"{MOST_UNANSWERED_SHARE:.0%}, too few answered to prove the run-once rule"
            )
        if self.stuck_keys:
            found.append(f"{len(self.stuck_keys)} keys still held two leases after the last worker died")
        if self.unfinished:
            found.append(f"{self.unfinished} runs never ended")
        if self.unheld_at_last_kill:
            found.append(
                f"no run held {self.unheld_at_last_kill} when the last workers died: the stuck-key check proves nothing"
            )
        return found

    def row(self) -> dict[str, str]:
        freed = self.freed_after
        return {
            "framework": self.framework,
            "enqueued": str(self.enqueued),
            "runs": str(self.runs),
            "skips": str(self.skips),
            "retries": str(self.retries),
            "kills (workers)": f"{self.kills} ({self.worker_kills})",
            "runs killed": str(self.killed_runs),
            "redeliveries": str(self.redeliveries),
            "overlaps": str(self.overlaps),
            "limit=2 at once (most)": ", ".join(str(most) for most in self.limited_peak.values()) or "-",
            "leases lost": str(self.lost_leases),
            "unaccounted": str(len(self.unaccounted)),
            "raised, DynamoDB not answering": str(len(self.raised_unanswered)),
            "lost by the broker (never received)": "-"
            if self.lost_by_broker is None
            else str(len(self.lost_by_broker)),
            "skipped, then the first copy killed": str(len(self.skipped_then_killed)),
            "stuck keys": str(len(self.stuck_keys)),
            "killed key free after (leases)": (
                f"{min(freed):.2f} / {statistics.median(freed):.2f} / {max(freed):.2f}" if freed else "-"
            ),
            "after the last kill (leases)": f"{self.last_freed_after:.2f}"
            if self.last_freed_after is not None
            else "-",
            "seconds": f"{self.seconds:.0f}" if self.seconds is not None else "-",
        }


def render(reports: list[TaskChaosReport]) -> str:
    """A Markdown table, one row a framework."""
    if not reports:
        return ""
    rows = [report.row() for report in reports]
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row[column] for column in header) + " |" for row in rows]
    return "\n".join(lines)


def _by_name(runs: list[TaskRun]) -> dict[str, list[TaskRun]]:
    by_name: dict[str, list[TaskRun]] = defaultdict(list)
    for run in sorted(runs, key=lambda run: run.started):
        by_name[run.name].append(run)
    return by_name
