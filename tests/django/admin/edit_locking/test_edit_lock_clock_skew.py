"""A crashed tab's edit lock under MAX_CLOCK_SKEW: the next editor gets it at once, and a read-only page says when
a lock frees if its tab was closed."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from dynalock_django.dynamodb import LockClient
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from ....dynamodb.clocks import OffsetClock
from ....dynamodb_support import HEARTBEAT, make_dynamodb
from ...admin_support import DESK_EDITOR, logged_in
from .test_admin_edit_lock import edit_lock_url, open_page, ticket_of

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

EDIT_LEASE = 2.0
SKEW = 0.5
FREES_AT = re.compile(r"If that tab was closed, the lock frees at (\d\d:\d\d:\d\d)\.")


@pytest.fixture
def people(make_staff, customer):
    """Alice, who edited the customer in a tab that crashed, and Bob, who opens it next."""
    return make_staff("alice", *DESK_EDITOR), make_staff("bob", *DESK_EDITOR), customer


def crashed_tab(dynalock, obj, user, *, last_renewed_ago):
    """``user``'s tab, granted by another server, last renewed ``last_renewed_ago`` seconds ago, then gone."""
    server = LockClient(
        make_dynamodb(dynalock["ENDPOINT_URL"]),
        dynalock["TABLE_NAME"],
        lease_duration=4 * HEARTBEAT,
        heartbeat_period=HEARTBEAT,
        clock=OffsetClock(-last_renewed_ago),  # its stamp says: that long ago
    )
    data = LockData(purpose="edit", user_id=str(user.pk), username=user.get_username(), tab="t" * 22)
    server.acquire(
        key_for_instance(obj),
        owner_name=f"django-user:{user.pk}/tab:{'t' * 22}",
        lease_duration=EDIT_LEASE,
        keep_alive=False,
        data=data.to_bytes(),
        timeout=0,
    )
    server.close()


def test_with_max_clock_skew_a_tab_gone_longer_than_its_lease_and_the_bound_frees_at_once(people, dynalock):
    alice, bob, customer = people
    crashed_tab(dynalock, customer, alice, last_renewed_ago=EDIT_LEASE + SKEW + 1)
    with override_settings(DYNALOCK={**dynalock, "EDIT_LEASE_DURATION": EDIT_LEASE, "MAX_CLOCK_SKEW": SKEW}):
        assert ticket_of(open_page(logged_in(bob), customer)) is not None  # editable at once


def test_a_read_only_page_waiting_for_such_a_tab_hears_it_is_free(people, dynalock):
    alice, bob, customer = people
    crashed_tab(dynalock, customer, alice, last_renewed_ago=EDIT_LEASE + SKEW + 1)
    with override_settings(DYNALOCK={**dynalock, "EDIT_LEASE_DURATION": EDIT_LEASE, "MAX_CLOCK_SKEW": SKEW}):
        assert logged_in(bob).get(edit_lock_url(customer, "status")).json() == {"state": "free"}


def test_without_it_the_same_tab_keeps_its_lock_for_a_lease_and_the_page_says_until_when(people, dynalock):
    alice, bob, customer = people
    crashed_tab(dynalock, customer, alice, last_renewed_ago=EDIT_LEASE + SKEW + 1)
    with override_settings(DYNALOCK={**dynalock, "EDIT_LEASE_DURATION": EDIT_LEASE}):
        before = datetime.now(UTC)
        page = open_page(logged_in(bob), customer)
        assert ticket_of(page) is None
        [frees_at] = FREES_AT.findall(page.content.decode())
        after = datetime.now(UTC)
    # This server first saw the lock while the page was served: the clock-free rule lets it go a lease after
    # that (TIME_ZONE is UTC; the page shows whole seconds, hence the second's slack below).
    shown = datetime.combine(before.date(), datetime.strptime(frees_at, "%H:%M:%S").time(), tzinfo=UTC)
    assert before + timedelta(seconds=EDIT_LEASE - 1) <= shown <= after + timedelta(seconds=EDIT_LEASE)


def test_a_tab_renewed_just_now_is_not_freed_by_the_bound_and_its_time_is_said(people, dynalock):
    alice, bob, customer = people
    crashed_tab(dynalock, customer, alice, last_renewed_ago=0.0)
    with override_settings(DYNALOCK={**dynalock, "EDIT_LEASE_DURATION": EDIT_LEASE, "MAX_CLOCK_SKEW": SKEW}):
        bobs = logged_in(bob)
        status = bobs.get(edit_lock_url(customer, "status")).json()
        assert status["state"] == "held"
        assert FREES_AT.search(status["message"])
        assert ticket_of(open_page(bobs, customer)) is None
