"""What OpenTelemetry costs an acquire + release: the API absent, present without an SDK, and the SDK recording.

    python -m tests.benchmarks.telemetry [--rounds 10] [--calls 100]

Each mode runs in its own process (the API hidden by a meta-path finder for
"absent"; the SDK's providers set for "SDK"), against one local endpoint.
The rounds are interleaved (absent, API, SDK, absent, ...) so the machine's
drift falls on every mode alike; the table gives each mode's median time per
acquire + release and its ratio to "absent". Compare rows, not machines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODES = {
    "absent": "API absent (nothing imported)",
    "api": "API present, no SDK",
    "sdk": "SDK recording (metrics + spans)",
}


class _NoOpenTelemetry:
    """A meta-path finder that makes ``opentelemetry`` look not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}")


def _set_up_sdk() -> object:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return exporter


def worker(mode: str, endpoint_url: str, table_name: str) -> None:
    """Serve rounds: read "calls" from stdin, run that many acquire + release, answer the seconds each took.

    Wall time, and this process's CPU time: the server's share and the machine's load fall out of the latter.
    """
    if mode == "absent":
        sys.meta_path.insert(0, _NoOpenTelemetry())
    exporter = _set_up_sdk() if mode == "sdk" else None
    from dynalock_django.dynamodb import LockClient, telemetry

    from ..dynamodb_support import make_dynamodb, unique

    assert (mode != "absent") == telemetry.ENABLED
    client = LockClient(make_dynamodb(endpoint_url, read_timeout=30), table_name, lease_duration=300)
    key = unique("bench")
    client.acquire(key).release()  # connections open, caches warm
    for line in sys.stdin:
        calls = int(line)
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            client.acquire(key).release()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(json.dumps([wall / calls, cpu / calls]), flush=True)
        if exporter is not None:
            exporter.clear()  # type: ignore[attr-defined]
    client.close()
    if mode == "absent":
        assert not [name for name in sys.modules if name.startswith("opentelemetry")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=100, help="acquire + release per round")
    parser.add_argument("--worker", nargs=3, metavar=("MODE", "ENDPOINT", "TABLE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    from dynalock_django.dynamodb import LockClient

    from ..dynamodb_support import make_dynamodb, unique
    from .protocol import endpoint

    with endpoint() as endpoint_url:
        table_name = f"bench-{unique()}"
        # Patient time-outs (a loaded machine), and a lease that fits them.
        LockClient(make_dynamodb(endpoint_url, read_timeout=30), table_name, lease_duration=300).create_table()
        workers = {
            mode: subprocess.Popen(
                [sys.executable, "-m", __spec__.name, "--worker", mode, endpoint_url, table_name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=os.environ,
            )
            for mode in MODES
        }
        times: dict[str, list[list[float]]] = {mode: [] for mode in MODES}
        order = list(workers)
        try:
            for _ in range(args.rounds):
                order.append(order.pop(0))  # each mode goes first in turn
                for mode in order:
                    process = workers[mode]
                    assert process.stdin is not None
                    assert process.stdout is not None
                    process.stdin.write(f"{args.calls}\n")
                    process.stdin.flush()
                    times[mode].append(json.loads(process.stdout.readline()))
        finally:
            for process in workers.values():
                assert process.stdin is not None
                process.stdin.close()
            for mode, process in workers.items():
                if process.wait(timeout=60) != 0:
                    raise SystemExit(f"the {mode} worker failed")
    wall = {mode: statistics.median(wall for wall, _ in rounds) for mode, rounds in times.items()}
    cpu = {mode: statistics.median(cpu for _, cpu in rounds) for mode, rounds in times.items()}
    print(f"acquire + release, {args.rounds} interleaved rounds of {args.calls}, each mode in its own process")
    print(f"{'mode':<34}{'wall ms':>9}{'ratio':>7}{'CPU ms':>9}{'ratio':>7}{'CPU µs more':>13}")
    for mode, label in MODES.items():
        print(
            f"{label:<34}{wall[mode] * 1000:>9.3f}{wall[mode] / wall['absent']:>7.3f}"
            f"{cpu[mode] * 1000:>9.3f}{cpu[mode] / cpu['absent']:>7.3f}{(cpu[mode] - cpu['absent']) * 1e6:>13.0f}"
        )


if __name__ == "__main__":
    main()
