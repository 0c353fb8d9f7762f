"""The hooks for opentelemetry-instrumentation-botocore: an expected refusal is not an ERROR span.

Instrumented without them, botocore's span for every refused conditional
write reads as an error; with them, a refusal inside a dynalock span is OK
and says so, while one outside (a heartbeat finding its lease gone) stays an error.
"""

from __future__ import annotations

import pytest
from opentelemetry.instrumentation.botocore import BotocoreInstrumentor
from opentelemetry.trace import StatusCode

from dynalock_django.dynamodb import LockLost, botocore_request_hook, botocore_response_hook

from ...otel_support import described_as_their_keys, recorded


@pytest.fixture
def instrument():
    otel = recorded()
    instrumentor = BotocoreInstrumentor()

    def instrumented(**hooks):
        instrumentor.instrument(**hooks)
        otel.reset()
        return otel

    with described_as_their_keys():
        yield instrumented
    instrumentor.uninstrument()


def refused_update_items(otel):
    return [span for span in otel.spans("DynamoDB.UpdateItem") if span.attributes.get("rpc.method") == "UpdateItem"]


def quiet_holder(make_client):
    """A holder whose heartbeat does not renew while a test counts UpdateItem spans (a renewal is one too)."""
    return make_client(lease_duration=60, heartbeat_period=15)


def test_without_the_hooks_a_contended_try_reads_as_an_error(instrument, make_client, key):
    holder, waiter = quiet_holder(make_client), make_client()
    holder.acquire(key)
    otel = instrument()
    assert waiter.try_acquire(key) is None
    (botocore_span,) = refused_update_items(otel)
    assert botocore_span.status.status_code is StatusCode.ERROR  # the instrumentation's own verdict


def test_with_the_hooks_a_refusal_inside_an_acquire_is_ok_and_nests_under_it(instrument, make_client, key):
    holder, waiter = quiet_holder(make_client), make_client()
    holder.acquire(key)
    otel = instrument(request_hook=botocore_request_hook, response_hook=botocore_response_hook)
    assert waiter.try_acquire(key) is None
    (acquire_span,) = otel.spans("dynalock.acquire")
    requests = [span for span in otel.spans() if span.parent and span.parent.span_id == acquire_span.context.span_id]
    assert {span.name for span in requests} >= {"DynamoDB.UpdateItem"}
    (refused,) = [span for span in requests if span.name == "DynamoDB.UpdateItem"]
    assert refused.status.status_code is StatusCode.OK
    assert refused.attributes["dynalock.result"] == "condition_failed"


def test_with_the_hooks_a_heartbeat_finding_its_lease_gone_is_still_an_error(instrument, make_client, key):
    holder, operator = quiet_holder(make_client), make_client()
    lease = holder.acquire(key)
    operator.force_release(operator.get(key), released_by="ops")
    otel = instrument(request_hook=botocore_request_hook, response_hook=botocore_response_hook)
    with pytest.raises(LockLost):
        lease.extend()  # a renewal: no dynalock span around it
    (refused,) = refused_update_items(otel)
    assert refused.status.status_code is StatusCode.ERROR


@pytest.mark.requires("transactions")
def test_the_request_hook_names_the_table_of_a_transaction(instrument, make_client, key, table_name):
    otel = instrument(request_hook=botocore_request_hook, response_hook=botocore_response_hook)
    make_client().acquire_many([f"{key}-a", f"{key}-b"], timeout=5).release()
    transactions = otel.spans(
        "DynamoDB.TransactWriteItems"
    )  # the acquire's (and its retries under load), the release's
    named = [span.attributes.get("aws.dynamodb.table_names") for span in transactions]
    assert named.count((table_name,)) >= 2
    assert None not in named
