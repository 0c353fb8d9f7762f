"""The changelist's "Being edited" column: who edits each row, one BatchGetItem per page, never a 500."""

from __future__ import annotations

import os
import re
import socket

import pytest

from dynalock_django import lock_object
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from testproject.desk.admin import CustomerAdmin
from testproject.desk.models import Customer

from ....dynamodb_support import FaultInjector
from ...admin_support import held_by_user, logged_in
from ...testapp.models import Tag

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

CUSTOMERS = "/admin/desk/customer/"
EDITOR = ("view_customer", "change_customer")


@pytest.fixture
def alice(make_staff):
    return make_staff("alice", *EDITOR)


def column(response) -> list[str]:
    """The column's cells, top to bottom (the admin writes an empty one as a no-break space)."""
    return [cell.replace("&nbsp;", "") for cell in column_cells(response.content.decode())]


def column_cells(html: str) -> list[str]:
    return re.findall(r'<td class="field-edit_lock_status">(.*?)</td>', html, re.S)


def test_rows_say_who_edits_them_in_one_batch_read(alice, make_staff, requests_made):
    bob = make_staff("bob", *EDITOR)
    acme, globex, initech = (Customer.objects.create(name=name) for name in ("Acme", "Globex", "Initech"))
    logged_in(alice).get(f"{CUSTOMERS}{acme.pk}/change/")
    logged_in(bob).get(f"{CUSTOMERS}{globex.pk}/change/")
    held_by_user(key_for_instance(initech), "carol", 3)
    requests_made.reset()

    bobs_list = logged_in(bob).get(CUSTOMERS)

    assert requests_made.calls == {"BatchGetItem": 1}
    assert "Being edited" in bobs_list.content.decode()
    names = re.findall(r'<th class="field-name"><a href="[^"]*">(\w+)</a>', bobs_list.content.decode())
    by_name = dict(zip(names, column(bobs_list), strict=True))
    assert by_name == {"Initech": "carol, 3 min", "Globex": "you", "Acme": "alice, 0 min"}


def test_free_and_released_rows_say_nothing(alice, requests_made):
    _acme, globex = Customer.objects.create(name="Acme"), Customer.objects.create(name="Globex")
    get_client().acquire(key_for_instance(globex)).release()
    assert column(logged_in(alice).get(CUSTOMERS)) == ["", ""]


def test_a_row_locked_by_code_names_host_and_pid_only_to_who_may_see_live_locks(alice, make_staff, customer):
    operator = make_staff("olga", *EDITOR, "view_lock")
    with lock_object(customer):
        staffs, operators = column(logged_in(alice).get(CUSTOMERS)), column(logged_in(operator).get(CUSTOMERS))
    assert staffs == ["a background job, 0 min"]
    assert operators == [f"{socket.gethostname()} (pid {os.getpid()}), 0 min"]


def test_long_edits_count_hours(alice, customer):
    held_by_user(key_for_instance(customer), "carol", 65)
    assert column(logged_in(alice).get(CUSTOMERS)) == ["carol, 1 h 5 min"]


def test_a_full_page_of_100_rows_takes_one_request_and_an_empty_page_none(alice, requests_made):
    Customer.objects.bulk_create(Customer(name=f"c{number}") for number in range(130))
    client = logged_in(alice)
    requests_made.reset()
    first = client.get(CUSTOMERS)
    assert len(column(first)) == 100
    assert requests_made.calls == {"BatchGetItem": 1}
    requests_made.reset()
    assert len(column(client.get(f"{CUSTOMERS}?p=2"))) == 30
    assert requests_made.calls == {"BatchGetItem": 1}
    requests_made.reset()
    assert column(client.get(f"{CUSTOMERS}?q=nobody-by-that-name")) == []
    assert requests_made.total == 0


def test_what_the_table_says_is_escaped(alice, customer):
    held_by_user(key_for_instance(customer), "<script>alert(1)</script>", 1)
    html = logged_in(alice).get(CUSTOMERS).content.decode()
    assert "<script>alert(1)" not in html
    assert column_cells(html) == ["&lt;script&gt;alert(1)&lt;/script&gt;, 1 min"]


def test_a_dynamodb_failure_shows_the_list_without_the_column_and_a_notice(alice, customer):
    faults = FaultInjector(get_client().dynamodb)
    faults.fail("BatchGetItem", "InternalServerError", 500, times=100)
    response = logged_in(alice).get(CUSTOMERS)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Acme" in html
    assert "Being edited" not in html
    assert column(response) == []
    # DynamoDB failing (500s) is DynamoDB not answering: the words every admin page uses then.
    assert "Editing is paused: the lock service is not answering. Try again in a minute." in html
    assert "InternalServerError" not in html
    assert "injected" not in html


def test_the_column_can_be_turned_off_and_then_costs_no_request(alice, customer, monkeypatch, requests_made):
    monkeypatch.setattr(CustomerAdmin, "edit_lock_column", False)
    response = logged_in(alice).get(CUSTOMERS)
    assert "Being edited" not in response.content.decode()
    assert "BatchGetItem" not in requests_made.calls  # the changed row's lock was claimed, no list was read


def test_the_column_stays_where_list_display_places_it(alice, customer, monkeypatch):
    monkeypatch.setattr(CustomerAdmin, "list_display", ["edit_lock_status", "name", "plan"])
    html = logged_in(alice).get(CUSTOMERS).content.decode()
    headers = re.findall(r'<th scope="col" class="(?:sortable )?column-(\w+)', html)
    assert headers == ["edit_lock_status", "name", "plan"]


def test_a_list_editable_post_shown_again_has_no_column_and_reads_no_locks(make_staff, requests_made):
    Tag.objects.create(slug="red", label="Red")
    editor = make_staff("edith", "view_tag", "change_tag")
    invalid = {
        "form-TOTAL_FORMS": 1,
        "form-INITIAL_FORMS": 1,
        "form-0-slug": "red",
        "form-0-label": "x" * 101,
        "_save": "1",
    }
    requests_made.reset()
    response = logged_in(editor).post("/admin/testapp/tag/", invalid)
    assert response.status_code == 200  # the form is shown again with its error
    assert "Being edited" not in response.content.decode()
    assert "BatchGetItem" not in requests_made.calls  # the changed row's lock was claimed, no list was read
