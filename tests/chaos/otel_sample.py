"""A sample of the OpenTelemetry metrics a chaos run exports: ``DYNALOCK_CHAOS_METRICS=DIR python -m tests.chaos``.

With the variable set, each worker records with the SDK (an in-memory reader)
and writes its metrics to DIR at its normal end (a worker the run kills
writes none); ``python -m tests.chaos.otel_sample DIR`` sums them by
instrument and attributes.
"""

from __future__ import annotations

import collections
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

ENV = "DYNALOCK_CHAOS_METRICS"


def start_if_asked(worker_name: str) -> Callable[[], None]:
    """Record with the SDK when asked; what writes the metrics, for the worker to call at its end.

    Not at exit: a worker forked by multiprocessing ends with ``os._exit``, which runs no atexit hook.
    """
    directory = os.environ.get(ENV)
    if not directory:
        return lambda: None
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

    def dump() -> None:
        rows = []
        data = reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = point.count if hasattr(point, "count") else point.value
                        total = getattr(point, "sum", None)
                        rows.append([metric.name, dict(point.attributes), value, total])
        Path(directory, f"{worker_name}-{os.getpid()}.json").write_text(json.dumps(rows))

    return dump


def main(directory: str) -> None:
    summed: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for path in sorted(Path(directory).glob("*.json")):
        for name, attributes, value, total in json.loads(path.read_text()):
            row = summed[(name, json.dumps(attributes, sort_keys=True))]
            row[0] += value
            row[1] += total or 0.0
    for (name, attributes), (value, total) in sorted(summed.items()):
        extra = f"  sum {total:.3f} s" if name.endswith(".duration") else ""
        print(f"{name:<28} {attributes:<90} {value:>8g}{extra}")


if __name__ == "__main__":
    main(sys.argv[1])
