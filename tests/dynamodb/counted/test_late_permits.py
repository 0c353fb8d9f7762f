"""A permit's write answered only after the lease it would grant ran out grants nothing, as a single lock's does.

The store answers late on the virtual clock (tests/dynamodb/acquiring/test_late_answers.py: SlowAnswers). A try
answered late is written once more at once; answered late again, it raises DynamoDBUnavailable, never None, which
would say every permit is held while nobody held one (a task copy's "skip" of work nobody is doing).
"""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb import DynamoDBUnavailable

from ..acquiring.test_late_answers import IN_TIME, LATE, SlowAnswers


@pytest.fixture
def slow(make_client, dynamodb, virtual_clock):
    return make_client(dynamodb, clock=virtual_clock), SlowAnswers(dynamodb, virtual_clock)


def test_a_semaphores_try_answered_late_once_tries_once_more(slow, key):
    client, answers = slow
    answers.late("UpdateItem", LATE, IN_TIME)

    lease = client.semaphore(key, 1).try_acquire()

    assert lease is not None
    assert lease.is_held()
    assert lease.permit == 0
    lease.release()


def test_a_semaphores_try_answered_late_twice_raises_unavailable_and_lets_its_permit_go(slow, key, virtual_clock):
    client, answers = slow
    answers.late("UpdateItem", LATE, LATE)

    with pytest.raises(DynamoDBUnavailable, match="only after the lease they would grant had run out"):
        client.semaphore(key, 1).try_acquire()

    virtual_clock.advance(0)
    assert client.held_leases() == []
    assert client.semaphore(key, 1).holders() == []  # the permit our late write took was given back
    lease = client.semaphore(key, 1).try_acquire()  # answered in time now
    assert lease is not None
    lease.release()
