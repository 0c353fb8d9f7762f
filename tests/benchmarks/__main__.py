"""Run every benchmark, one table each: ``python -m tests.benchmarks`` (``make bench``)."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = [
    "protocol",
    "client_cpu",
    "acquire_path",
    "many_locks",
    "many_leases",
    "async_locks",
    "django_layer",
    "many_objects",
    "live_locks",
    "live_index",
    "edit_lock",
    "telemetry",
    "recovery",
    "bad_day",
    "handoff",
]


def main() -> None:
    for name in BENCHMARKS:
        print(f"\n== {name}", flush=True)
        module = importlib.import_module(f"{__package__}.{name}")
        sys.argv = [f"python -m {module.__name__}"]
        module.main()


if __name__ == "__main__":
    main()
