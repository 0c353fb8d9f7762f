"""Under ``locks_in_memory()`` pages and the command read the items' times by the virtual clock that wrote them.

A user's test sees what production shows: a live lock as live, a dead one as dead, ``Retry-After`` from the
holder's lease; never a comparison of the virtual clock's stamps with the machine's clock.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.http import HttpResponse
from django.urls import include, path

from dynalock_django import requires_lock
from dynalock_django.keys import key_for_instance
from dynalock_django.testing import locks_in_memory
from testproject.desk.models import Customer

from .admin_support import LIVE_LOCKS, logged_in

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]
LEASE = 6.0


@requires_lock(Customer)
def rename(request, pk):
    return HttpResponse("saved")


urlpatterns = [path("customers/<int:pk>/rename/", rename), path("", include("testproject.urls"))]


def show(*target: str) -> str:
    out = io.StringIO()
    call_command("dynalock", "show", *target, stdout=out)
    return out.getvalue()


def test_a_live_lock_reads_as_live_in_the_command_the_page_and_retry_after(make_staff, customer):
    with locks_in_memory(LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=2.0) as memory:
        holder = memory.new_client()
        holder.acquire(key_for_instance(customer))
        holder.semaphore("exports", 3).acquire()

        assert "1 of 3 in use" in show("exports")
        row = show("desk.customer", str(customer.pk))
        assert "held" in row
        assert "dead" not in row
        page = logged_in(make_staff("vera", "view_lock")).get(LIVE_LOCKS).content.decode()
        assert "Nobody holds a lock" not in page
        assert "exports" in page
        refused = logged_in(make_staff("mia")).get(f"/customers/{customer.pk}/rename/")
        assert refused.status_code == 423
        assert refused["Retry-After"] == "6"


def test_time_the_test_lets_pass_counts_and_a_holder_that_stopped_renewing_reads_as_dead(make_staff, customer):
    with locks_in_memory(LEASE_DURATION=LEASE, HEARTBEAT_PERIOD=2.0) as memory:
        holder = memory.new_client()
        holder.acquire(key_for_instance(customer))
        holder.close(release=False)  # its process dies: no more renewals
        memory.advance(4.0)
        refused = logged_in(make_staff("mia")).get(f"/customers/{customer.pk}/rename/")
        assert refused["Retry-After"] == "2"
        memory.advance(LEASE + 61.0)  # past its lease and the minute after which the pages call it dead
        assert "dead" in show("desk.customer", str(customer.pk))
