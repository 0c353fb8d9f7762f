"""Asking to edit: a read-only page gets its user in line; the first live waiter gets the lock when it frees."""

from __future__ import annotations

import time

import pytest

from dynalock_django.admin.edit_locking import edit_queue
from dynalock_django.admin.edit_locking.tickets import HANDOFF_COOKIE
from dynalock_django.client import get_client
from dynalock_django.dynamodb import Waiter
from dynalock_django.dynamodb.wire.waiters import MAX_WAITERS
from dynalock_django.keys import key_for_instance
from testproject.desk.admin import CustomerAdmin
from testproject.desk.models import Customer

from ...admin_support import DESK_EDITOR, browser, logged_in, with_token
from .test_admin_edit_lock import (
    change_url,
    customer_form,
    delete_url,
    edit_lock_url,
    open_page,
    renew,
    stored,
    ticket_of,
)

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def carol(make_staff):
    return make_staff("carol", *DESK_EDITOR)


def ask(client, obj):
    return client.post(edit_lock_url(obj, "ask"))


def wait(client, obj):
    return client.post(edit_lock_url(obj, "wait"))


def queued_names(obj):
    return [waiter.name for waiter in stored(obj).waiters]


def release(client, obj, ticket):
    assert client.post(edit_lock_url(obj, "release"), {"ticket": str(ticket)}).json() == {"state": "released"}


def test_a_read_only_page_offers_to_ask_and_asking_is_one_request(alice, bob, customer, requests_made):
    alices, bobs = logged_in(alice), logged_in(bob)
    open_page(alices, customer)
    config = open_page(bobs, customer).context["dynalock"]["config"]
    assert config["mayAsk"]
    assert config["askUrl"] == edit_lock_url(customer, "ask")
    requests_made.reset()

    answer = ask(bobs, customer).json()

    assert requests_made.calls == {"UpdateItem": 1}
    assert answer["state"] == "waiting"
    assert "You are next" in answer["message"]
    assert queued_names(customer) == ["bob"]


def test_the_holder_learns_who_waits_from_its_renewal_at_no_extra_request(alice, bob, customer, requests_made):
    alices = logged_in(alice)
    ticket = ticket_of(open_page(alices, customer))
    ask(logged_in(bob), customer)
    requests_made.reset()

    answer = renew(alices, customer, ticket).json()

    assert requests_made.calls == {"UpdateItem": 1}  # the renewal the page makes anyway
    assert answer["state"] == "held"
    assert answer["waiting"].startswith("bob is waiting to edit since ")


def test_a_waiting_page_polls_with_one_request_and_gets_the_lock_when_it_frees(alice, bob, customer, requests_made):
    alices, bobs = logged_in(alice), logged_in(bob)
    alices_ticket = ticket_of(open_page(alices, customer))
    open_page(bobs, customer)
    ask(bobs, customer)
    requests_made.reset()
    assert wait(bobs, customer).json()["state"] == "waiting"
    assert requests_made.calls == {"UpdateItem": 1}
    release(alices, customer, alices_ticket)
    requests_made.reset()

    answer = wait(bobs, customer)

    assert answer.json()["state"] == "taken"
    assert requests_made.calls == {"UpdateItem": 2}  # the poll, and the take that leaves the line
    assert queued_names(customer) == []
    # The page reloads, and the reload edits: the lock was left for it.
    assert HANDOFF_COOKIE in answer.cookies
    page = open_page(bobs, customer)
    assert page.context["dynalock"]["mode"] == "edit"
    assert stored(customer).owner_name.startswith(f"django-user:{bob.pk}/")


def test_only_the_first_live_waiter_may_take_a_freed_lock(alice, bob, carol, customer, make_staff):
    alices, bobs, carols = logged_in(alice), logged_in(bob), logged_in(carol)
    alices_ticket = ticket_of(open_page(alices, customer))
    ask(bobs, customer)
    ask(carols, customer)
    release(alices, customer, alices_ticket)

    carols_turn = wait(carols, customer).json()
    assert carols_turn["state"] == "waiting"
    assert "bob asked to edit first" in carols_turn["message"]
    # Someone who did not ask is not given it either: the page lets it go and says who is next.
    dave = logged_in(make_staff("dave", *DESK_EDITOR))
    page = open_page(dave, customer)
    assert page.context["dynalock"]["mode"] == "view"
    assert "bob asked to edit first" in page.context["dynalock"]["message"]
    assert stored(customer).is_released
    assert dave.get(edit_lock_url(customer, "status")).json()["state"] == "next"

    assert wait(bobs, customer).json()["state"] == "taken"
    assert queued_names(customer) == ["carol"]
    assert wait(carols, customer).json()["state"] == "waiting"


def test_a_waiter_who_leaves_drops_out_and_the_next_gets_it(alice, bob, carol, customer):
    alices, bobs, carols = logged_in(alice), logged_in(bob), logged_in(carol)
    alices_ticket = ticket_of(open_page(alices, customer))
    ask(bobs, customer)
    ask(carols, customer)
    assert bobs.post(edit_lock_url(customer, "leave")).json() == {"state": "left"}
    assert queued_names(customer) == ["carol"]
    release(alices, customer, alices_ticket)

    assert wait(carols, customer).json()["state"] == "taken"


def test_a_waiter_whose_page_went_silent_is_passed_over_and_taken_out(alice, bob, carol, customer):
    alices, carols = logged_in(alice), logged_in(carol)
    alices_ticket = ticket_of(open_page(alices, customer))
    ask(logged_in(bob), customer)
    ask(carols, customer)
    release(alices, customer, alices_ticket)
    client = get_client()
    client.dynamodb.update_item(  # bob's page last polled longer ago than a waiter stays live
        TableName=client.table_name,
        Key={"key": {"S": key_for_instance(customer)}},
        UpdateExpression="SET #w.#bob.#seen = :then",
        ExpressionAttributeNames={"#w": "waiters", "#bob": edit_queue.waiter_id(bob), "#seen": "seen"},
        ExpressionAttributeValues={":then": {"N": str(int((time.time() - edit_queue.LIVE_SECONDS - 1) * 1000))}},
    )

    assert wait(carols, customer).json()["state"] == "taken"
    assert queued_names(customer) == []  # carol left the line in the take, and bob was taken out with her


def seen_ago(obj, user_waiter_id, seconds):
    """Set a waiter's last poll ``seconds`` ago, as the table stores it."""
    client = get_client()
    client.dynamodb.update_item(
        TableName=client.table_name,
        Key={"key": {"S": key_for_instance(obj)}},
        UpdateExpression="SET #w.#id.#seen = :then",
        ExpressionAttributeNames={"#w": "waiters", "#id": user_waiter_id, "#seen": "seen"},
        ExpressionAttributeValues={":then": {"N": str(int((time.time() - seconds) * 1000))}},
    )


def test_a_waiter_in_a_background_tab_keeps_its_turn(alice, bob, carol, customer):
    alices, bobs = logged_in(alice), logged_in(bob)
    alices_ticket = ticket_of(open_page(alices, customer))
    ask(bobs, customer)
    # A hidden tab's timers wake about once a minute: bob's page last polled 100 s ago.
    seen_ago(customer, edit_queue.waiter_id(bob), 100)
    release(alices, customer, alices_ticket)

    page = open_page(logged_in(carol), customer)  # carol merely opens the page: it is kept for bob

    assert page.context["dynalock"]["mode"] == "view"
    assert "bob asked to edit first" in page.context["dynalock"]["message"]
    assert wait(bobs, customer).json()["state"] == "taken"


def test_twenty_people_who_closed_their_tabs_do_not_fill_the_queue(alice, bob, customer):
    ticket_of(open_page(logged_in(alice), customer))
    key = key_for_instance(customer)
    for number in range(MAX_WAITERS):
        get_client().join_queue(key, f"django-user:x{number}", name=f"w{number}")
        seen_ago(customer, f"django-user:x{number}", edit_queue.LIVE_SECONDS + 1)  # gone without the leave beacon

    answer = ask(logged_in(bob), customer).json()

    assert answer["state"] == "waiting"
    assert "You are next" in answer["message"]
    assert queued_names(customer) == ["bob"]  # the ask took the stale entries out


def test_asking_for_a_free_lock_takes_it(alice, bob, customer):
    alices = logged_in(alice)
    release(alices, customer, ticket_of(open_page(alices, customer)))

    answer = ask(logged_in(bob), customer)

    assert answer.json()["state"] == "taken"
    assert HANDOFF_COOKIE in answer.cookies
    assert queued_names(customer) == []


def test_take_over_with_the_permission_jumps_the_queue_and_says_so(alice, bob, make_staff, customer):
    carol = make_staff("carol", *DESK_EDITOR, "force_release")
    alices, carols = logged_in(alice), logged_in(carol)
    ticket_of(open_page(alices, customer))
    ask(logged_in(bob), customer)

    confirmation = carols.get(edit_lock_url(customer, "take-over"))
    assert "Waiting to edit after them: bob. Taking over puts you ahead of them." in confirmation.content.decode()
    token = stored(customer).fencing_token
    assert carols.post(edit_lock_url(customer, "take-over"), {"fencing_token": str(token)}).status_code == 302
    assert stored(customer).owner_name.startswith(f"django-user:{carol.pk}/")
    assert queued_names(customer) == ["bob"]  # still waiting, now for carol


def test_asking_and_waiting_need_a_csrf_post_and_the_change_permission(alice, customer, make_staff):
    ticket_of(open_page(logged_in(alice), customer))
    viewer = logged_in(make_staff("vera", "view_customer"))
    assert ask(viewer, customer).status_code == 403
    assert wait(viewer, customer).status_code == 403
    editor = make_staff("bob", *DESK_EDITOR)
    assert logged_in(editor).get(edit_lock_url(customer, "ask")).status_code == 405
    assert browser(editor).post(edit_lock_url(customer, "ask")).status_code == 403  # no CSRF token
    assert browser(editor).post(edit_lock_url(customer, "ask"), with_token({})).status_code == 200
    assert queued_names(customer) == ["bob"]


def test_hostile_names_from_the_table_are_shown_as_text(alice, bob, customer):
    alices = logged_in(alice)
    ticket = ticket_of(open_page(alices, customer))
    hostile = '</script><img src=x onerror=alert(1)> "x'
    get_client().join_queue(key_for_instance(customer), "django-user:99", name=hostile)

    waiting = renew(alices, customer, ticket).json()["waiting"]  # the script shows it with textContent
    assert waiting.startswith(hostile)
    release(alices, customer, ticket)
    page = open_page(logged_in(bob), customer).content.decode()
    assert "<img src=x" not in page
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &quot;x asked to edit first" in page


def test_the_holders_own_user_is_not_listed_as_waiting(alice, customer):
    waiter = Waiter(edit_queue.waiter_id(alice), "alice", time.time(), time.time())
    assert edit_queue.waiting_message([waiter], alice) == ""


@pytest.mark.parametrize(
    ("seen_ago", "live"),
    [
        (0.0, True),
        (edit_queue.LIVE_SECONDS, True),
        (edit_queue.LIVE_SECONDS + 0.1, False),
        (-edit_queue.LIVE_SECONDS, True),  # a waiting server's clock that far ahead
        (-1e12, False),  # "seen" in the year 33,000: a hostile item's ghost would hold the line for ever
    ],
)
def test_a_waiter_is_live_while_seen_within_the_live_window(seen_ago, live):
    now = 1_000_000.0
    waiter = Waiter("w", "w", now - 100, now - seen_ago)
    assert (edit_queue.live_waiters([waiter], now) == [waiter]) is live


def test_a_save_frees_the_lock_for_the_waiter(alice, bob, customer, django_capture_on_commit_callbacks):
    alices, bobs = logged_in(alice), logged_in(bob)
    ticket = ticket_of(open_page(alices, customer))
    ask(bobs, customer)
    with django_capture_on_commit_callbacks(execute=True):
        assert alices.post(change_url(customer), customer_form(ticket, name="Acme Corp")).status_code == 302
    assert queued_names(customer) == ["bob"]  # the save's release kept the line
    assert wait(bobs, customer).json()["state"] == "taken"


def test_nothing_is_deleted_while_the_free_lock_is_kept_for_a_waiter(alice, bob, carol, customer):
    alices = logged_in(alice)
    ticket = ticket_of(open_page(alices, customer))
    ask(logged_in(bob), customer)
    release(alices, customer, ticket)
    carols = logged_in(carol)

    response = carols.post(delete_url(customer), {"post": "yes"})

    assert response.status_code == 302
    assert "bob asked to edit first" in carols.get(response.url).content.decode()
    assert Customer.objects.filter(pk=customer.pk).exists()
    assert stored(customer).is_released  # carol let it go at once
    assert queued_names(customer) == ["bob"]


def test_an_idle_page_continuing_is_told_the_lock_is_kept_for_a_waiter(alice, bob, customer):
    alices = logged_in(alice)
    page = open_page(alices, customer)
    ticket, opened = ticket_of(page), page.context["dynalock"]["config"]["opened"]
    ask(logged_in(bob), customer)
    release(alices, customer, ticket)  # idle: the page let go

    answer = alices.post(edit_lock_url(customer, "resume"), {"ticket": str(ticket), "opened": opened}).json()

    assert answer["state"] == "busy"
    assert "bob asked to edit first" in answer["message"]


def test_a_full_queue_says_so_and_an_object_nobody_opened_is_simply_taken(alice, bob, customer):
    ticket_of(open_page(logged_in(alice), customer))
    for number in range(MAX_WAITERS):
        get_client().join_queue(key_for_instance(customer), f"django-user:x{number}", name=f"w{number}")

    answer = ask(logged_in(bob), customer).json()

    assert answer == {"state": "dropped", "message": "The queue for this is full."}
    other = Customer.objects.create(name="Globex")
    assert stored(other) is None
    assert ask(logged_in(bob), other).json()["state"] == "taken"  # no lock item at all: asking takes it
    assert stored(other).owner_name.startswith(f"django-user:{bob.pk}/")


@pytest.mark.parametrize("time_zone", ["UTC", "Asia/Tokyo"])
def test_a_waiter_since_the_end_of_time_is_shown_without_breaking_the_holders_renewal(alice, time_zone, settings):
    settings.TIME_ZONE = time_zone
    now = time.time()
    waiter = Waiter("django-user:hostile", "mallory", 253402300799.0, now)  # 9999-12-31 23:59:59 UTC
    assert edit_queue.waiting_message([waiter], alice) == "mallory is waiting to edit since " + (
        "23:59." if time_zone == "UTC" else "?."
    )


@pytest.mark.parametrize(
    ("period", "warned"),
    [
        (3.0, False),
        (60, False),
        (61, True),
        (0, True),
        (-1, True),
        (float("nan"), True),
        (float("inf"), True),
        ("3", True),
    ],
)
def test_w004_a_poll_period_that_would_drop_waiters(period, warned):
    from django.contrib import admin

    class SlowAdmin(CustomerAdmin):
        edit_lock_poll_seconds = period

    assert ("dynalock.W004" in [message.id for message in SlowAdmin(Customer, admin.site).check()]) is warned
