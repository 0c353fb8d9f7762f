"""The admin on a bad day: while DynamoDB does not answer, pages say so at once ("Editing is paused"), change
pages open read-only, and EDIT_DURING_OUTAGE lets a desk keep editing without locks (each save logged, the
fence still refusing stale saves).

The breaker is opened as calls that get no answer open it; a page served while it is open sends no request
(counted on the process client's boto3 client): that is why it answers at once, whatever DynamoDB does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import RequestFactory, override_settings

from dynalock_django.admin.edit_locking.change_page import save_without_lock
from dynalock_django.admin.edit_locking.outage_saves import FENCE_FIELD
from dynalock_django.client import get_client
from dynalock_django.exceptions import StaleFencingToken
from dynalock_django.fencing import fenced_refresh, fenced_save
from testproject.desk.models import Customer

from ...chaos.proxy import FaultProxy, FaultRates
from ...dynamodb_support import RequestCounter
from ..admin_support import LIVE_LOCKS, PATIENT, logged_in
from .edit_locking.test_admin_edit_lock import change_url, customer_form, open_page, ticket_of

pytestmark = [pytest.mark.stores, pytest.mark.django_db, pytest.mark.uses_dynalock]

PAUSED = "Editing is paused: the lock service is not answering. Try again in a minute."


@pytest.fixture
def proxy(dynalock: dict[str, Any]) -> Iterator[FaultProxy]:
    with FaultProxy(dynalock["ENDPOINT_URL"], FaultRates(), seed=21) as started:
        try:
            yield started
        finally:
            started.hang(0)


def through(dynalock: dict[str, Any], proxy: FaultProxy, **settings: Any) -> Any:
    """DYNALOCK through ``proxy``, with a cool-down longer than any test: no probe reaches the store in one."""
    return override_settings(DYNALOCK={**dynalock, "ENDPOINT_URL": proxy.url, "BREAKER_COOL_DOWN": 600.0, **settings})


# Reads patient enough for a loaded CI core's store: a page opened before the outage must open with its lock
# (with the suite's 0.5 s read time-out one opened read-only, "paused", and its save had no ticket to renew).
# 2 s, not PATIENT's 10: the save's renewal waits one out on the hung endpoint.
PATIENT_READS = {
    **PATIENT,
    "BOTO_CONFIG": {"connect_timeout": 1, "read_timeout": 2, "retries": {"total_max_attempts": 1}},
}


@pytest.fixture
def cool_down(dynalock: dict[str, Any], proxy: FaultProxy) -> Iterator[None]:
    with through(dynalock, proxy, **PATIENT_READS):
        yield


@pytest.fixture
def editing_during_outage(dynalock: dict[str, Any], proxy: FaultProxy) -> Iterator[None]:
    with through(dynalock, proxy, EDIT_DURING_OUTAGE=True):
        yield


def fenced(page: Any, form: dict[str, Any]) -> dict[str, Any]:
    """``form`` with the page's signed fence, as the page posts it (tests/django/admin/test_outage_fence.py)."""
    return {**form, FENCE_FIELD: page.context["dynalock"]["fence"]}


def dynamodb_stops_answering(proxy: FaultProxy) -> RequestCounter:
    """The endpoint holds every request unanswered, and the process client's breaker is open, as calls without
    an answer open it; counts what is sent from now on (a renewal is never refused by the breaker: it waits)."""
    proxy.hang(60)
    breaker = get_client().breaker
    for _ in range(10):
        breaker.unanswered(ConnectionError("no answer"), probe=False)
    assert breaker.is_open
    return RequestCounter(get_client().dynamodb)


def test_the_change_page_opens_read_only_at_once_saying_editing_is_paused(cool_down, proxy, alice, customer):
    client = logged_in(alice)
    sent = dynamodb_stops_answering(proxy)
    page = open_page(client, customer)
    assert sent.total == 0  # failed at once: the breaker is open
    assert page.context["dynalock"]["message"] == PAUSED
    assert PAUSED in page.content.decode()
    assert ticket_of(page) is None
    assert not page.context["has_change_permission"]  # read-only


def test_the_changelist_says_editing_is_paused_without_its_column(cool_down, proxy, alice, customer):
    client = logged_in(alice)
    sent = dynamodb_stops_answering(proxy)
    page = client.get("/admin/desk/customer/")
    assert sent.total == 0
    assert page.status_code == 200
    assert PAUSED in [str(message) for message in page.context["messages"]]
    assert "Being edited" not in page.content.decode()
    assert "Acme" in page.content.decode()  # the rows are there


def test_the_live_locks_page_says_editing_is_paused(cool_down, proxy, make_staff):
    client = logged_in(make_staff("carol", "view_lock"))
    sent = dynamodb_stops_answering(proxy)
    page = client.get(LIVE_LOCKS)
    assert sent.total == 0
    assert PAUSED in page.content.decode()


def test_a_save_from_a_page_whose_lock_cannot_be_renewed_is_refused_saying_editing_is_paused(
    cool_down, proxy, alice, customer
):
    client = logged_in(alice)
    ticket = ticket_of(open_page(client, customer))
    assert ticket is not None  # the page holds its lock: what is tested is its renewal at the save
    dynamodb_stops_answering(proxy)
    refused = client.post(change_url(customer), customer_form(ticket, name="Acme Ltd"))
    assert PAUSED in refused.content.decode()
    assert "Nothing was saved" in refused.content.decode()
    customer.refresh_from_db()
    assert customer.name == "Acme"


def test_edit_during_outage_opens_the_page_editable_and_saves_without_a_lock_logged(
    editing_during_outage, proxy, alice, customer, caplog
):
    client = logged_in(alice)
    sent = dynamodb_stops_answering(proxy)
    page = open_page(client, customer)
    assert page.context["has_change_permission"]
    assert page.context["dynalock"]["mode"] == "outage"
    assert "without an edit lock" in page.context["dynalock"]["message"]
    with caplog.at_level(logging.WARNING, logger="dynalock_django.admin"):
        saved = client.post(change_url(customer), fenced(page, customer_form(None, name="Acme Ltd")))
    assert saved.status_code == 302
    customer.refresh_from_db()
    assert customer.name == "Acme Ltd"
    assert sent.total == 0
    [logged] = [r for r in caplog.records if "without its edit lock" in r.getMessage()]
    assert logged.levelno == logging.WARNING
    assert "alice" in logged.getMessage()


def test_edit_during_outage_saves_a_page_that_held_its_lock_when_it_cannot_be_renewed(
    editing_during_outage, proxy, alice, customer, caplog
):
    client = logged_in(alice)
    page = open_page(client, customer)
    dynamodb_stops_answering(proxy)
    with caplog.at_level(logging.WARNING, logger="dynalock_django.admin"):
        saved = client.post(change_url(customer), fenced(page, customer_form(ticket_of(page), name="Acme Ltd")))
    assert saved.status_code == 302
    customer.refresh_from_db()
    assert customer.name == "Acme Ltd"
    assert any("without its edit lock" in r.getMessage() for r in caplog.records)


def test_edit_during_outage_refuses_a_lockless_save_once_dynamodb_answers_again(
    editing_during_outage, proxy, alice, customer
):
    client = logged_in(alice)
    dynamodb_stops_answering(proxy)
    open_page(client, customer)  # editable, without a lock
    proxy.hang(0)  # DynamoDB is back: the page must take the lock (reload)
    get_client().breaker.answered(probe=False)
    refused = client.post(change_url(customer), customer_form(None, name="Acme Ltd"))
    assert "does not hold the edit lock" in refused.content.decode()
    customer.refresh_from_db()
    assert customer.name == "Acme"


def test_edit_during_outage_leaves_the_fence_refusing_stale_saves(editing_during_outage, proxy, alice, customer):
    fenced_refresh(Customer.objects.get(pk=customer.pk), 10)  # last written under token 10
    client = logged_in(alice)
    dynamodb_stops_answering(proxy)
    page = open_page(client, customer)
    assert client.post(change_url(customer), fenced(page, customer_form(None, name="Acme Ltd"))).status_code == 302
    stale = Customer.objects.get(pk=customer.pk)
    assert stale.fencing_token == 10  # the lockless save left the token as it was
    stale.name = "Written late by a lease that was lost"
    with pytest.raises(StaleFencingToken):
        fenced_save(stale, 5)
    customer.refresh_from_db()
    assert customer.name == "Acme Ltd"


def test_a_lockless_save_never_lowers_a_token_a_newer_lease_wrote_meanwhile(alice, customer):
    shown = Customer.objects.get(pk=customer.pk)  # read by the page's save, token None
    fenced_refresh(Customer.objects.get(pk=customer.pk), 12)  # a newer lease claims the row just then
    shown.name = "Acme Ltd"
    request = RequestFactory().post("/")
    request.user = alice
    save_without_lock(request, shown)
    customer.refresh_from_db()
    assert customer.name == "Acme Ltd"
    assert customer.fencing_token == 12
    older = Customer.objects.get(pk=customer.pk)
    with pytest.raises(StaleFencingToken):
        fenced_save(older, 11)
