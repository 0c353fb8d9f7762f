"""python -m tests.chaos [--short] [--seed N] [--duration S] [--workload NAME ...] [--processes N] [--part K/N]"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from pathlib import Path

from ..shares import part
from ..stores import shared_endpoint_url
from . import report, workloads

FULL_SECONDS, SHORT_SECONDS = 25.0, 5.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--short", action="store_true", help=f"{SHORT_SECONDS:g} s per workload (the test suite's run)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=float, default=None, help="Seconds per workload.")
    parser.add_argument("--processes", type=int, default=None, help="Processes per workload (default: its own).")
    parser.add_argument("--workload", action="append", choices=[w.name for w in workloads.WORKLOADS])
    parser.add_argument("--keep", action="store_true", help="Keep the histories (their directory is printed).")
    parser.add_argument("--part", type=part, default=(1, 1), help="K/N: the Kth of N shares of the workloads.")
    args = parser.parse_args(argv)
    duration = args.duration or (SHORT_SECONDS if args.short else FULL_SECONDS)
    share, shares = args.part
    chosen = [w for w in workloads.WORKLOADS[share - 1 :: shares] if not args.workload or w.name in args.workload]
    if args.processes:
        chosen = [dataclasses.replace(w, processes=args.processes) for w in chosen]
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    endpoint_url = shared_endpoint_url()
    workdir = Path(tempfile.mkdtemp(prefix="dynalock-chaos-"))
    outcomes = []
    for index, workload in enumerate(chosen):
        print(f"== {workload.name} ({workload.processes} processes, {duration:g} s)", flush=True)
        outcomes.append(workloads.run(workload, endpoint_url, args.seed * 100 + index, workdir, duration))
    print()
    print(report.render(outcomes))
    failed = report.failures(outcomes)
    if args.keep or failed:
        print(f"\nHistories: {workdir}")
    if failed:
        print(failed, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
