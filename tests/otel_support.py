"""OpenTelemetry's SDK, recording in memory: what the telemetry tests read every instrument and span from.

The SDK's providers are global and set once per process, so one pair serves
every test; :meth:`Recorded.reset` forgets what came before a test. Metrics
are read as deltas: each :meth:`Recorded.collect` holds what changed since the last.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, UpDownCounter
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dynalock_django.dynamodb import Described
from dynalock_django.dynamodb.options import CallChecks

DELTA = AggregationTemporality.DELTA


@dataclass(frozen=True)
class Point:
    name: str
    attributes: dict[str, Any]
    value: float  # a counter's sum, or a histogram's count
    total: float = 0.0  # a histogram's sum


class Collected:
    """What the instruments recorded between two collections."""

    def __init__(self, points: list[Point]) -> None:
        self.points = points

    def of(self, name: str, **attributes: Any) -> list[Point]:
        """The points of instrument ``name`` whose attributes include ``attributes`` (dots as ``__``)."""
        wanted = {key.replace("__", "."): value for key, value in attributes.items()}
        return [
            point
            for point in self.points
            if point.name == name and all(point.attributes.get(k) == v for k, v in wanted.items())
        ]

    def sum(self, name: str, **attributes: Any) -> float:
        return sum(point.value for point in self.of(name, **attributes))


class Recorded:
    def __init__(self) -> None:
        self.reader = InMemoryMetricReader(
            preferred_temporality={Counter: DELTA, UpDownCounter: DELTA, Histogram: DELTA}
        )
        self.exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[self.reader]))
        self.tracer = trace.get_tracer("tests")

    def reset(self) -> None:
        self.collect()
        self.exporter.clear()

    def collect(self) -> Collected:
        points: list[Point] = []
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                if scope.scope.name != "dynalock_django":
                    continue
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        if hasattr(point, "count"):
                            points.append(Point(metric.name, dict(point.attributes), point.count, point.sum))
                        else:
                            points.append(Point(metric.name, dict(point.attributes), point.value))
        return Collected([point for point in points if point.value != 0])

    def collect_until(self, seen: Callable[[Collected], bool], *, within: float) -> Collected:
        """What changed from now until ``seen`` holds of it (or ``within`` seconds ran out): a loaded machine
        may take long to record what an idle one records at once."""
        points: list[Point] = []
        deadline = time.monotonic() + within
        while True:
            points += self.collect().points
            collected = Collected(points)
            if seen(collected) or time.monotonic() > deadline:
                return collected
            time.sleep(0.01)

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if name is None or span.name == name]


@functools.cache
def recorded() -> Recorded:
    """The process's one recording SDK (set up on first use)."""
    return Recorded()


@contextlib.contextmanager
def described_as_their_keys() -> Iterator[None]:
    """Each lock acquired without ``described=`` is described with its key as its kind for the block: a test's
    metrics are told apart from other tests'. (A caller's description is kept.)"""
    request = CallChecks.request

    def described_by_key(checks: CallChecks, lock_ids: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("described") is None and not isinstance(lock_ids, list):
            kwargs["described"] = Described(lock_ids[0])
        return request(checks, lock_ids, *args, **kwargs)

    CallChecks.request = described_by_key  # type: ignore[method-assign]
    try:
        yield
    finally:
        CallChecks.request = request  # type: ignore[method-assign]
