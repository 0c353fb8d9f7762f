"""Any interleaving of readers, writers, releases, crashes and time: never a writer with a reader, never two writers.

Hypothesis draws the steps; every attempt is a try (``timeout=0``), so a step is a few
requests on the in-process store and time moves only on the virtual clock (with the
heartbeats it runs). After each step, of the leases their holders still count as held, no
writer is with a reader or another writer, and readers are at most ``max_readers``. A step
may also lose the released write item, as DynamoDB's TTL does (with it, any reader's mark).
"""

from __future__ import annotations

import contextlib

from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalock_django.dynamodb import LockTimeout

from ...dynamodb_support import LEASE, unique

CLIENTS, MAX_READERS = 3, 2

step = st.one_of(
    st.tuples(st.just("read"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("write"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("release"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("crash"), st.integers(0, CLIENTS - 1)),
    st.tuples(st.just("wait"), st.sampled_from([0.1, 0.5, LEASE])),
    st.tuples(st.just("lose"), st.just(0)),
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=20))
def test_no_interleaving_puts_a_writer_with_anyone(make_client, virtual_clock, dynamodb, table_name, steps):
    name = unique("rw")
    clients = [make_client(clock=virtual_clock) for _ in range(CLIENTS)]
    held: list[list] = [[] for _ in range(CLIENTS)]  # each client's leases, with their kind
    for kind, arg in steps:
        if kind == "wait":
            virtual_clock.advance(arg)
        elif kind == "lose":  # TTL deletes a released item (a held one keeps pushing its TTL forward)
            with contextlib.suppress(ClientError):
                dynamodb.delete_item(
                    TableName=table_name,
                    Key={"key": {"S": name}},
                    ConditionExpression="isReleased = :one",
                    ExpressionAttributeValues={":one": {"S": "1"}},
                )
        elif kind == "crash":  # stops renewing, releases nothing; a new process takes its place
            clients[arg].close(release=False)
            clients[arg], held[arg] = make_client(clock=virtual_clock), []
        elif kind == "release":
            for _, lease in held[arg]:
                lease.release(best_effort=True)
            held[arg] = []
        elif kind == "read":
            lease = clients[arg].readers_writer(name, max_readers=MAX_READERS).try_acquire_read()
            if lease is not None:
                held[arg].append(("read", lease))
        elif not any(k == "read" for k, _ in held[arg]):  # a holder of a read lock never asks to write
            with contextlib.suppress(LockTimeout):
                held[arg].append(
                    ("write", clients[arg].readers_writer(name, max_readers=MAX_READERS).acquire_write(timeout=0))
                )
        live = [k for leases in held for k, lease in leases if lease.is_held()]
        assert live.count("write") <= 1
        assert live.count("write") == 0 or live.count("read") == 0
        assert live.count("read") <= MAX_READERS
    for leases in held:
        for _, lease in leases:
            lease.release(best_effort=True)
