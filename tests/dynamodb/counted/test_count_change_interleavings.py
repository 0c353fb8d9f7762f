"""Any interleaving of runs under changing counts (1, 2, 3), releases, crashes and time: never too many at once.

As a rolling deploy mixes them: a count of 1 is the name's plain lock (its holder shuts the permits,
``exclude_permits``), a count of N a permit of a ``name_lock`` semaphore. Hypothesis draws the steps;
every attempt is a try, so a step is a few requests on the in-process store and time moves only on
the virtual clock. After each step, of the leases their holders still count as held: never more
than the smallest count among them (so a holder of the plain lock is alone).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalock_django.dynamodb import CountInUse, LockTimeout

from ...dynamodb_support import LEASE, unique

CLIENTS = 3

step = st.one_of(
    st.tuples(st.just("take"), st.integers(0, CLIENTS - 1), st.sampled_from([1, 2, 3])),
    st.tuples(st.just("release"), st.integers(0, CLIENTS - 1), st.just(0)),
    st.tuples(st.just("crash"), st.integers(0, CLIENTS - 1), st.just(0)),
    st.tuples(st.just("wait"), st.just(0), st.sampled_from([0.1, 0.5, LEASE])),
)


def take(client, name, count):
    """A run of a deploy with that count: its lease, or None when refused (other count held, or all taken)."""
    try:
        if count == 1:
            lease = client.try_acquire(name)
            if lease is not None:
                client.exclude_permits(lease)
            return lease
        return client.semaphore(name, count, name_lock=True).try_acquire()
    except (CountInUse, LockTimeout):  # LockTimeout: WouldDeadlock, this client's thread holds the name
        return None


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=16))
def test_never_more_holders_than_the_smallest_count_among_them(make_client, virtual_clock, steps):
    name = unique("deploy")
    clients = [make_client(clock=virtual_clock) for _ in range(CLIENTS)]
    held: list[list] = [[] for _ in range(CLIENTS)]  # each client's leases, with their count
    for kind, index, arg in steps:
        if kind == "wait":
            virtual_clock.advance(arg)
        elif kind == "crash":  # stops renewing, releases nothing: a worker of the old deploy killed
            clients[index].close(release=False)
            clients[index], held[index] = make_client(clock=virtual_clock), []
        elif kind == "release":
            for _, lease in held[index]:
                lease.release(best_effort=True)
            held[index] = []
        else:
            lease = take(clients[index], name, arg)
            if lease is not None:
                held[index].append((arg, lease))
        holding = [count for leases in held for count, lease in leases if lease.is_held()]
        assert len(holding) <= min(holding, default=0) or not holding, (kind, index, arg, holding)
    for client in clients:
        client.close()  # no heartbeats left running into the next example's virtual time
