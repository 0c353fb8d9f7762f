"""The live-locks page groups a semaphore's permits under one heading and a row's readers under the row."""

from __future__ import annotations

import html
import re

import pytest

from dynalock_django import lock_object, semaphore
from dynalock_django.client import get_client
from dynalock_django.exceptions import LockNotAcquired
from dynalock_django.keys import key_for_instance

from ...dynamodb_support import in_another_thread
from ..admin_support import LIVE_LOCKS, logged_in, put_item
from ..testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def viewer(make_staff):
    return make_staff("vera", "view_lock")


def table_rows(page: str) -> list[str]:
    """Each row of the table, headings and locks, as its text (tags dropped, whitespace folded)."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.DOTALL)
    texts = []
    for row in rows:
        row = re.sub(r"<details.*?</details>", "", row, flags=re.DOTALL)
        texts.append(" ".join(html.unescape(re.sub(r"<[^>]+>", " ", row)).split()))
    return texts


def test_a_semaphores_permits_are_listed_under_its_name_with_how_many_are_in_use(viewer):
    held = [semaphore("exports", 5, purpose="export") for _ in range(3)]
    permits = sorted(lock.acquire().permit for lock in held)
    try:
        rows = table_rows(logged_in(viewer).get(LIVE_LOCKS).content.decode())
    finally:
        for lock in held:
            lock.release()
    assert rows[0] == "exports 3 of 5 in use"
    assert [row.split(" - ")[0] for row in rows[1:]] == [f"permit {permit}" for permit in permits]
    assert len(rows) == 4  # the heading and its three permits, nothing else


def test_a_rows_readers_are_listed_under_the_row_named_for_those_who_may_see_it(viewer, make_staff):
    account = Account.objects.create(name="Acme")
    with lock_object(account, shared=True), lock_object(account, shared=True):
        rows = table_rows(logged_in(make_staff("nina", "view_lock", "view_account")).get(LIVE_LOCKS).content.decode())
        unnamed = table_rows(logged_in(viewer).get(LIVE_LOCKS).content.decode())
    assert rows[0] == "Acme 2 readers"
    assert [row.split(" ")[0] for row in rows[1:]] == ["reader", "reader"]
    assert unnamed[0] == f"Account {account.pk} 2 readers"  # the row's object is not named to whoever may not see it


def test_a_writer_waiting_for_readers_is_listed_with_them(make_staff):
    account = Account.objects.create(name="Acme")
    reader = lock_object(account, shared=True)
    reader.acquire()
    try:
        with pytest.raises(LockNotAcquired):  # the writer takes the row's item, finds a reader, lets go
            in_another_thread(lock_object(account, blocking=False).acquire)  # (the reader's own: WouldDeadlock)
        get_client().acquire(key_for_instance(account))  # a writer that holds the row's item (as while it waits)
        rows = table_rows(logged_in(make_staff("nina", "view_lock", "view_account")).get(LIVE_LOCKS).content.decode())
    finally:
        reader.release()
    assert rows[0] == "Acme 1 reader, a writer holds or waits for it"
    assert [row.split(" ")[0] for row in rows[1:]] == ["writer", "reader"]


def test_a_fragment_refresh_groups_the_same_way(viewer):
    with semaphore("exports", 2):
        rows = table_rows(logged_in(viewer).get(LIVE_LOCKS, {"fragment": "1"}).content.decode())
    assert rows[0] == "exports 1 of 2 in use"


def permit_item(key: str, permits: str, owner: str = "worker-1") -> dict:
    return {
        "key": {"S": key},
        "ownerName": {"S": owner},
        "leaseDuration": {"S": "3600000"},
        "recordVersionNumber": {"S": f"rvn-{key}"},
        "fencingToken": {"N": "7"},
        "permits": {"N": permits},
    }


def test_hostile_permit_items_are_escaped_and_counts_that_disagree_are_not_trusted(viewer):
    name = '<script>alert("x")</script>'
    put_item(permit_item(f"{name}#permit-0", "5", owner="<img src=x onerror=alert(1)>"))
    put_item(permit_item(f"{name}#permit-1", "7"))
    page = logged_in(viewer).get(LIVE_LOCKS).content.decode()
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    rows = table_rows(page)
    assert rows[0] == f"{name} 2 permits in use"  # two items saying 5 and 7: no "of N"
