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
