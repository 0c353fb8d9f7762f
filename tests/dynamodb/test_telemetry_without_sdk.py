"""With opentelemetry-api installed but no SDK, an acquire builds no span; once an SDK is set, spans are recorded.

A child process (the test process's SDK is set once for good by the telemetry tests) counts the
spans the API's proxy tracer is asked for, acquires and releases with no SDK set, then sets one.
"""

from __future__ import annotations

import textwrap

import pytest

from ..dynamodb_support import json_of_child, unique

pytestmark = pytest.mark.processes

CHILD = textwrap.dedent(
    """
    import json, sys
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tests.dynamodb_support import make_dynamodb, short_lease_client

    asked = []
    def counted(name):
        method = getattr(trace.ProxyTracer, name)
        return lambda self, *args, **kwargs: asked.append(name) or method(self, *args, **kwargs)

    for name in ("start_span", "start_as_current_span"):
        setattr(trace.ProxyTracer, name, counted(name))

    endpoint_url, table_name, key = sys.argv[1:]
    client = short_lease_client(make_dynamodb(endpoint_url), table_name)
    client.acquire(key, timeout=5).release()
    assert client.try_acquire(key) is not None
    without_sdk = list(asked)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    client.acquire(key + "-2", timeout=5).release()
    client.close()
    print(json.dumps({"without_sdk": without_sdk, "with_sdk": sorted({s.name for s in exporter.get_finished_spans()})}))
    """
)


def test_without_an_sdk_no_span_is_built_and_a_later_sdk_sees_spans(endpoint_url, table_name):
    found = json_of_child(CHILD, endpoint_url, table_name, unique())
    assert found["without_sdk"] == []
    assert {"dynalock.acquire", "dynalock.release"} <= set(found["with_sdk"]), found


METER_LATER = textwrap.dedent(
    """
    import json, sys
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from tests.dynamodb_support import make_dynamodb, short_lease_client

    endpoint_url, table_name, key = sys.argv[1:]
    client = short_lease_client(make_dynamodb(endpoint_url), table_name)
    client.acquire(key, timeout=5).release()  # no provider yet: telemetry looked and found none

    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))  # a meter alone, no tracer
    client.acquire(key + "-2", timeout=5).release()
    client.close()
    counted = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "dynalock.requests":
                    for point in metric.data.data_points:
                        operation = point.attributes["dynalock.operation"]
                        counted[operation] = counted.get(operation, 0) + point.value
    print(json.dumps(counted))
    """
)


def test_a_meter_provider_set_after_the_client_counts_its_requests(endpoint_url, table_name):
    """The look that skips telemetry while no provider is set sees a meter provider set later (no tracer's)."""
    assert json_of_child(METER_LATER, endpoint_url, table_name, unique()) == {"UpdateItem": 2}


FROM_THE_ENVIRONMENT = textwrap.dedent(
    """
    import json, os, sys
    os.environ["OTEL_PYTHON_TRACER_PROVIDER"] = "sdk_tracer_provider"  # the API's getter loads the SDK's itself
    from opentelemetry import trace
    from opentelemetry.sdk import trace as sdk_trace
    from tests.dynamodb_support import make_dynamodb, short_lease_client

    # Counted on the SDK's tracer: asking the getter for the provider here would load it for the client.
    started = []
    start = sdk_trace.Tracer.start_as_current_span
    sdk_trace.Tracer.start_as_current_span = lambda self, name, *a, **k: started.append(name) or start(
        self, name, *a, **k
    )

    endpoint_url, table_name, key = sys.argv[1:]
    client = short_lease_client(make_dynamodb(endpoint_url), table_name)
    client.acquire(key, timeout=5).release()
    client.close()
    print(json.dumps(started))
    """
)


def test_a_tracer_provider_named_in_the_environment_is_loaded_and_used(endpoint_url, table_name):
    """OTEL_PYTHON_TRACER_PROVIDER: no code sets a provider, the API's getter loads it on its first call."""
    found = json_of_child(FROM_THE_ENVIRONMENT, endpoint_url, table_name, unique())
    assert {"dynalock.acquire", "dynalock.release"} <= set(found), found
