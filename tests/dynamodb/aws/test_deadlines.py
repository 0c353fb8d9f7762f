"""The deadline rule inside one boto3 call, on numbers: no retry after a time-out, none that could start late."""

from __future__ import annotations

import pytest

from dynalock_django.dynamodb.aws.deadlines import longest_backoff, may_retry

from ..clocks import TICK

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("attempts", "backoff"), [(1, 1.0), (2, 2.0), (3, 4.0), (6, 20.0), (30, 20.0)])
def test_the_longest_backoff_is_botocores_standard_one(attempts, backoff):
    assert longest_backoff(attempts) == backoff


def test_a_time_out_is_never_retried_however_far_the_deadline():
    assert not may_retry(attempts=1, timed_out=True, now=0.0, deadline=float("inf"))


def test_a_retry_goes_only_if_it_starts_before_the_deadline_after_its_longest_backoff():
    assert may_retry(attempts=1, timed_out=False, now=0.0, deadline=1.0 + TICK)
    assert not may_retry(attempts=1, timed_out=False, now=0.0, deadline=1.0)
    assert not may_retry(attempts=2, timed_out=False, now=0.0, deadline=2.0)
    assert may_retry(attempts=2, timed_out=False, now=0.0, deadline=2.0 + TICK)


def test_without_a_deadline_an_answer_is_retried_as_botocore_decides():
    assert may_retry(attempts=5, timed_out=False, now=0.0, deadline=float("inf"))
