"""docs/django/semaphores.md's requests per operation are the code's: each is counted on the in-process store."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from django.test import override_settings

from dynalock_django import lock_object, semaphore
from dynalock_django.client import get_client

from ..dynamodb_support import RequestCounter, unique
from .testapp.models import Account, Ticket

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

DOC = Path(__file__).resolve().parents[2] / "docs" / "django" / "semaphores.md"
ROW = re.compile(r"^\| (?P<operation>[^|]+?) \| (?P<requests>(?:\d+ [A-Za-z]+(?: \+ )?)+) \|")


def documented() -> dict[str, Counter[str]]:
    section = DOC.read_text().split("## Costs", 1)[1]
    rows = {}
    for line in section.splitlines():
        if match := ROW.match(line):
            counted: Counter[str] = Counter()
            for part in match["requests"].split(" + "):
                number, name = part.split(" ")
                counted[name] += int(number)
            rows[match["operation"]] = counted
    return rows


def counted(operation) -> Counter[str]:
    requests = RequestCounter(get_client().dynamodb)
    operation()
    return Counter(requests.calls)


@pytest.fixture
def patient_leases(dynalock):
    """Leases no loaded machine's pause brings a renewal of: what is counted is each operation's own requests."""
    with override_settings(DYNALOCK={**dynalock, "LEASE_DURATION": 60.0, "HEARTBEAT_PERIOD": 20.0}):
        yield


@pytest.mark.usefixtures("patient_leases")
def test_the_documented_requests_are_what_each_operation_sends():
    account = Account.objects.create(name="Acme")
    name = unique("exports")
    held = {}

    def take(label, lock):
        held[label] = lock
        lock.acquire()

    measured = {
        "`semaphore` acquire, a permit free": counted(lambda: take("permit", semaphore(name, 5))),
        "`semaphore` release": counted(lambda: held["permit"].release()),
        "`lock_object(row, shared=True)` acquire, no writer": counted(
            lambda: take("reader", lock_object(account, shared=True))
        ),
        "reader release": counted(lambda: held["reader"].release()),
        "`lock_object(row)` acquire (the writer), after readers": counted(lambda: take("writer", lock_object(account))),
        "writer release": counted(lambda: held["writer"].release()),
        "`lock_object(row)` acquire, no reader since the last writer": counted(
            lambda: take("again", lock_object(account))
        ),
        "`lock_object(row)` acquire, the row's first": counted(
            lambda: take("first", lock_object(Account.objects.create(name="New")))
        ),
        "`lock_object(row)` acquire, a model not in `SHARED_LOCK_MODELS`, the row's first too": counted(
            lambda: take("plain", lock_object(Ticket.objects.create(title="New")))
        ),
    }
    assert documented() == measured
