"""`make verify`: check the Promela models with spin, the clean ones must pass, each bug switch must fail.

Each row compiles one model (``spin -a``, then ``gcc`` on the ``pan.c`` it writes) with its
``#define``s, runs ``pan``, and reads from its output the states stored, the depth reached, the
errors and, when it found one, the counterexample's length (steps in its trail). The table is
printed; the exit status is 1 when any row's verdict is not the one expected (README.md, docs/verification.md).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

# pan's flags. Safety: assertions and invalid end states, stopping at the first error.
SAFETY = ("-DSAFETY", "-DNOCLAIM", "-DCOLLAPSE")
# Liveness: a never claim from an LTL formula, acceptance cycles (-a) under weak fairness (-f).
LIVENESS = ("-DCOLLAPSE", "-DNFAIR=3")  # weak fairness over the clients, clocks, operator, monitor
# Three clients: bitstate hashing (a 2^BITS-bit table), which may miss states but never reports a false error.
BITSTATE = ("-DSAFETY", "-DNOCLAIM", "-DBITSTATE")
BITS = 22


@dataclass(frozen=True)
class Row:
    name: str
    model: str
    defines: tuple[str, ...]
    cflags: tuple[str, ...]
    pan_args: tuple[str, ...]
    expect_pass: bool
    what: str


@dataclass(frozen=True)
class Result:
    row: Row
    states: int
    depth: int
    seconds: float
    errors: int
    trail_steps: int | None

    @property
    def passed(self) -> bool:
        return self.errors == 0

    @property
    def as_expected(self) -> bool:
        return self.passed == self.row.expect_pass


TWO_CLIENTS_SAFETY = ("-m100000",)
ROWS = (
    Row("clean: 2 clients, lost answers", "lock.pml", ("-DFORCES=0",), SAFETY, TWO_CLIENTS_SAFETY, True, "(1) (2)"),
    Row("clean: 2 clients, force-release", "lock.pml", ("-DLOSSES=0",), SAFETY, TWO_CLIENTS_SAFETY, True, "(1) (2)"),
    Row(
        "clean: 2 clients, liveness p3, force-release",
        "lock.pml",
        ("-DRENEWS=0", "-DLOSSES=0"),
        LIVENESS,
        ("-a", "-f", "-m100000"),
        True,
        "(3)",
    ),
    Row(
        "clean: 2 clients, liveness p3, lost answers",
        "lock.pml",
        ("-DRENEWS=0", "-DFORCES=0"),
        LIVENESS,
        ("-a", "-f", "-m100000"),
        True,
        "(3)",
    ),
    Row(
        "clean: 3 clients, bitstate",
        "lock.pml",
        ("-DN=3", "-DFORCES=0", "-DLOSSES=0"),
        BITSTATE,
        (f"-w{BITS}", "-m100000"),
        True,
        "(1) (2)",
    ),
    Row("clean: acquire_many, 2 clients 2 keys", "acquire_many.pml", (), SAFETY, (), True, "(4)"),
    Row("BUG_LEASE_FROM_ANSWER", "lock.pml", ("-DFORCES=0", "-DBUG_LEASE_FROM_ANSWER"), SAFETY, (), False, "(1)"),
    Row("BUG_RENEW_AFTER_RELEASE", "lock.pml", ("-DFORCES=0", "-DBUG_RENEW_AFTER_RELEASE"), SAFETY, (), False, "(1)"),
    Row("BUG_NO_VERSION_CONDITION", "lock.pml", ("-DFORCES=0", "-DBUG_NO_VERSION_CONDITION"), SAFETY, (), False, "(1)"),
    Row("BUG_TOKEN_REUSED", "lock.pml", ("-DLOSSES=0", "-DBUG_TOKEN_REUSED"), SAFETY, (), False, "(2)"),
    Row("BUG_UNSORTED (acquire_many)", "acquire_many.pml", ("-DBUG_UNSORTED",), SAFETY, (), False, "(4)"),
    Row("control: no drift margin", "lock.pml", ("-DFORCES=0", "-DMARGIN=0"), SAFETY, (), False, "(1)"),
    Row(
        "control: waiters never take over",
        "lock.pml",
        ("-DRENEWS=0", "-DCONTROL_NO_TAKEOVER"),
        LIVENESS,
        ("-a", "-f"),
        False,
        "(3)",
    ),
)


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0 and command[0] != "./pan":
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout + done.stderr


def number(pattern: str, output: str) -> int:
    found = re.search(pattern, output)
    if found is None:
        raise RuntimeError(f"pan's output has no {pattern!r}:\n{output}")
    return int(float(found.group(1)))


def trail_steps(trail: Path) -> int | None:
    """Steps of the counterexample: the trail's lines, less its markers (negative ids: where a cycle starts)."""
    if not trail.exists():
        return None
    return sum(1 for line in trail.read_text().splitlines() if line and not line.startswith("-"))


def check(row: Row, spin: str, cc: str) -> Result:
    with tempfile.TemporaryDirectory(prefix="dynalock-verify-") as scratch:
        work = Path(scratch)
        shutil.copy(HERE / row.model, work / row.model)
        started = time.monotonic()
        run([spin, *row.defines, "-a", row.model], work)
        # Optimizing pan.c costs a second of compiling: worth it only where pan searches every state.
        optimize = "-O1" if row.expect_pass and row.model == "lock.pml" else "-O0"
        run([cc, optimize, "-w", *row.cflags, "-o", "pan", "pan.c"], work)
        output = run(["./pan", *row.pan_args], work)
        seconds = time.monotonic() - started
        return Result(
            row,
            states=number(r"(\d+(?:\.\d+)?(?:e\+\d+)?) states, stored", output),
            depth=number(r"depth reached (\d+)", output),
            seconds=seconds,
            errors=number(r"errors: (\d+)", output),
            trail_steps=trail_steps(work / f"{row.model}.trail"),
        )


def table(results: list[Result]) -> str:
    header = ("model", "checks", "states", "depth", "seconds", "verdict", "counterexample", "expected")
    lines = [
        (
            r.row.name,
            r.row.what,
            str(r.states),
            str(r.depth),
            f"{r.seconds:.1f}",
            "pass" if r.passed else "FAIL",
            "-" if r.trail_steps is None else f"{r.trail_steps} steps",
            "yes" if r.as_expected else "NO",
        )
        for r in results
    ]
    widths = [max(len(cell) for cell in column) for column in zip(header, *lines, strict=True)]
    rendered = [header, tuple("-" * w for w in widths), *lines]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in rendered)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--spin", default="spin")
    parser.add_argument("--cc", default="gcc")
    parser.add_argument("--only", help="run only the rows whose name contains this")
    args = parser.parse_args(argv)
    for tool in (args.spin, args.cc):
        if shutil.which(tool) is None:
            print(
                f"{tool} is not installed: `apt-get install spin gcc` (Debian), or pass --spin/--cc.", file=sys.stderr
            )
            return 2
    started = time.monotonic()
    results = []
    for row in ROWS:
        if args.only and args.only not in row.name:
            continue
        results.append(check(row, args.spin, args.cc))
        done = results[-1]
        print(f"  {row.name}: {done.states} states, {done.seconds:.1f} s", file=sys.stderr, flush=True)
    print(table(results))
    unexpected = [r.row.name for r in results if not r.as_expected]
    print(f"{len(results)} models in {time.monotonic() - started:.1f} s", end="")
    print(f"; UNEXPECTED: {', '.join(unexpected)}" if unexpected else "; every verdict as expected")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
