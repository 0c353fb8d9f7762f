"""A group (acquire_many) takes its place in the line of every key it finds held, as a single acquire does.

Each client stands for a process, on the virtual clock. Before the group joined lines, a key that
two processes handed back and forth in line went to one of them at every release, and the group,
waiting outside the line, never got it (issue 41, item 3).
"""

from __future__ import annotations

import threading

from dynalock_django.dynamodb import LeaseGroup, LockClient, LockTimeout

from .test_line import line_of, run_until_done, start_waiter

HOLD = 0.3  # how long each of the two processes keeps the key before handing it on


def test_a_group_gets_a_key_two_processes_hand_back_and_forth(make_client, key, virtual_clock):
    contended, free = f"{key}-a", f"{key}-b"
    ping, pong, group_client = (make_client(clock=virtual_clock, owner_name=name) for name in ("ping", "pong", "group"))
    stop = threading.Event()
    holders: list[tuple[str, int]] = []  # who took the contended key, in order, with its token
    outcome: list[LeaseGroup | LockTimeout] = []

    def hand_back_and_forth(client: LockClient) -> None:
        while not stop.is_set():
            try:
                lease = client.acquire(contended, timeout=2)
            except LockTimeout:
                continue
            holders.append((client.owner_name, lease.fencing_token))
            virtual_clock.wait(stop, HOLD)
            lease.release()

    def take_both() -> None:
        try:
            group = group_client.acquire_many([contended, free], timeout=5)
        except LockTimeout as timed_out:
            outcome.append(timed_out)
            return
        holders.append(("group", group.fencing_tokens[contended]))
        outcome.append(group)
        group.release()

    players = [start_waiter(virtual_clock, lambda: hand_back_and_forth(ping))]
    virtual_clock.advance(0.01)  # ping holds the key
    players.append(start_waiter(virtual_clock, lambda: hand_back_and_forth(pong)))
    virtual_clock.advance(0.01)  # pong waits in line
    waiting_group = start_waiter(virtual_clock, take_both)
    virtual_clock.advance(0.01)
    assert line_of(group_client, contended) == ["pong", "group"]  # the group joined behind pong

    run_until_done(virtual_clock, [waiting_group], seconds=10)
    stop.set()
    run_until_done(virtual_clock, players, seconds=10)

    (got,) = outcome
    assert isinstance(got, LeaseGroup), got
    owners = [owner for owner, _ in holders]
    assert owners[:3] == ["ping", "pong", "group"]  # its turn came right after the one before it in line
    tokens = [token for _, token in holders]
    assert tokens == sorted(set(tokens))  # one holder at a time: tokens strictly increase
