"""Any item, any key: every reader of the table answers, and shows what it read escaped.

Hypothesis writes items no client would write — every attribute type, empty
and huge strings, control characters, numbers at and past every limit,
attributes missing or foreign — under arbitrary keys, and at the keys of an
edited customer and of an account behind ``@requires_lock``. Then it renders
the live-locks page and its fragment, the release confirmation, the change page's
banner and status endpoint, ``manage.py dynalock list/show/describe/release``
(text and ``--json``) and the 423 response: nothing raises, nothing answers
500, HTML stays escaped and terminal text stays printable.
"""

from __future__ import annotations

import json
import time
from io import StringIO
from typing import Any
from unittest import mock

import pytest
from django.contrib import admin
from django.core.management import CommandError, call_command
from django.db.models import F
from django.http import HttpResponse
from django.test import override_settings
from django.urls import path
from hypothesis import example, given
from hypothesis import strategies as st

from dynalock_django import requires_lock
from dynalock_django.client import get_client
from dynalock_django.conf import dynalock_settings
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from .admin_support import LIVE_LOCKS, RELEASE, browser, put_item
from .testapp.models import Account

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]


@requires_lock(Account)
def deposit(request, pk):
    Account.objects.filter(pk=pk).update(balance=F("balance") + 1)
    return HttpResponse("deposited")


urlpatterns = [path("admin/", admin.site.urls), path("accounts/<int:pk>/deposit/", deposit)]

MARKUP = "<b>boom</b>"  # must never reach a page unescaped
HOSTILE = [
    MARKUP,
    "<script>alert(1)</script>",
    "\x1b]0;pwned\x07",
    "\x1b[2K\rsomeone else",
    "line\nforged",
    "\u202eevil",
    "\x00\x7f\x85\u2028",
    "&amp; \"' `",
    "",
    "x" * 5000,
]
texts = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20))
# DynamoDB's own range: 38 significant digits, magnitudes 1E-130 to 9.99...E+125.
numbers = st.one_of(
    st.sampled_from(
        [
            "0",
            "-1",
            "1.5",
            "999999999999999999",
            "253402300799999",
            "-253402300799999",
            "1E+125",
            "9" * 38,
            "9.9999999999999999999999999999999999999E+125",
            "-9.9999999999999999999999999999999999999E+125",
            "1E-130",
            "-1E-130",
            "1" + "0" * 125,
        ]
    ),
    st.integers(-(10**125), 10**125).filter(lambda number: len(str(abs(number)).rstrip("0")) <= 38).map(str),
    st.integers(-(10**20), 10**20).map(str),
)
# JSON numbers past a float (1e400), Infinity and NaN (Python's json writes and reads them), and any type.
# And lone surrogates, which JSON may spell but no UTF-8 page can hold.
JSON_ODDITIES = [
    "1e400",
    "-1e400",
    "Infinity",
    "-Infinity",
    "NaN",
    "1e308",
    "1" + "0" * 125,
    '"1e400"',
    "[1]",
    "{}",
    '"\\ud800"',
    '"a\\udfffb"',
    '{"\\udc00": ["\\ud800"]}',
]
json_values = st.one_of(
    st.sampled_from(JSON_ODDITIES),
    st.none().map(lambda _: "null"),
    st.booleans().map(json.dumps),
    texts.map(json.dumps),
    st.integers().map(str),
    st.floats().map(lambda number: json.dumps(number)),
)
payloads = st.one_of(
    st.binary(max_size=40),
    st.builds(
        lambda username, purpose, host, pid: json.dumps(
            {"dynalock": 1, "username": username, "purpose": purpose, "host": host, "pid": pid}
        ).encode(),
        st.one_of(st.none(), texts),
        texts,
        texts,
        st.one_of(st.integers(), st.sampled_from(["x", "1e999"])),
    ),
    # Each field of the payload of any JSON type or value, written as raw text.
    st.fixed_dictionaries(
        {},
        optional={
            name: json_values for name in ("dynalock", "username", "user_id", "purpose", "host", "pid", "tab", "extra")
        },
    ).map(lambda fields: ("{" + ",".join(f'"{name}":{text}' for name, text in fields.items()) + "}").encode()),
)
scalars = st.one_of(
    texts.map(lambda text: {"S": text}),
    numbers.map(lambda number: {"N": number}),
    payloads.map(lambda raw: {"B": raw}),
    st.booleans().map(lambda flag: {"BOOL": flag}),
    st.just({"NULL": True}),
    st.sets(st.text(min_size=1, max_size=8), min_size=1, max_size=3).map(lambda items: {"SS": sorted(items)}),
    st.sets(numbers, min_size=1, max_size=3).map(lambda items: {"NS": sorted(items)}),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3).map(lambda items: {"L": items}),
    st.dictionaries(st.text(min_size=1, max_size=8), scalars, max_size=3).map(lambda items: {"M": items}),
)
# A waiter seen just now (drawn when the example is), so the pages name it as next in line.
now_ms = st.builds(lambda: {"N": str(int(time.time() * 1000))})
epoch_ms = numbers.map(lambda number: {"N": number})
# Each attribute of the wire format: absent, well typed with an odd value, or of any type at all.
WELL_TYPED = {
    "ownerName": texts.map(lambda text: {"S": text}),
    "leaseDuration": numbers.map(lambda number: {"S": number}),
    "recordVersionNumber": texts.map(lambda text: {"S": text}),
    "data": payloads.map(lambda raw: {"B": raw}),
    "isReleased": st.sampled_from([{"S": "1"}, {"S": "0"}, {"S": ""}]),
    "fencingToken": numbers.map(lambda number: {"N": number}),
    "acquiredAt": numbers.map(lambda number: {"N": number}),
    "renewedAt": numbers.map(lambda number: {"N": number}),
    "releasedBy": texts.map(lambda text: {"S": text}),
    # The queue of waiters: entries under any id, with any name and times (the holder's page and
    # the read-only page name the first live one).
    "waiters": st.dictionaries(
        texts.filter(bool),
        st.one_of(
            st.fixed_dictionaries(
                {"name": st.one_of(texts.map(lambda text: {"S": text}), values)},
                optional={
                    "since": st.one_of(epoch_ms, values),
                    "seen": st.one_of(now_ms, epoch_ms, values),
                    "foreign": values,
                },
            ).map(lambda entry: {"M": entry}),
            values,
        ),
        max_size=3,
    ).map(lambda queue: {"M": queue}),
}
items = st.fixed_dictionaries(
    {}, optional={name: st.one_of(typed, values) for name, typed in WELL_TYPED.items()}
).flatmap(
    lambda known: st.dictionaries(st.sampled_from(["ttl", "foreign", "x-y"]), values, max_size=2).map(
        lambda foreign: {**foreign, **known}
    )
)
keys = st.one_of(
    texts,
    st.sampled_from(["desk.customer:", "testapp.ticket:", "testapp.membership:", "auth.user:", "a.b:"]).flatmap(
        lambda label: st.one_of(texts, numbers).map(lambda pk: label + pk)
    ),
).filter(lambda key: 0 < len(key.encode("utf-8")) <= 2048)


# Besides what hypothesis draws, always: the calendar's last millisecond (past year 9999 east of
# UTC), a lease of 31 million years and an integer pk past every column's range; and markup everywhere.
LAST_MILLISECOND = {"N": "253402300799999"}
OVERFLOWING = {
    "ownerName": {"S": "someone"},
    "leaseDuration": {"S": "999999999999999999"},
    "recordVersionNumber": {"S": "1"},
    "acquiredAt": LAST_MILLISECOND,
    "renewedAt": LAST_MILLISECOND,
}
# Strings at the size budget: an item just inside DynamoDB's 400 KB, in the attributes pages show.
AT_THE_BUDGET = {
    "ownerName": {"S": MARKUP * 12_000},
    "leaseDuration": {"S": "60000"},
    "recordVersionNumber": {"S": "v" * 90_000},
    "data": {"B": LockData(username=MARKUP * 8_000, purpose="p" * 60_000).to_bytes()},
    "releasedBy": {"S": "r" * 15_000},
}
HOSTILE_PAYLOAD = {
    "ownerName": {"S": "someone"},
    "leaseDuration": {"S": "60000"},
    "recordVersionNumber": {"S": "1"},
    "data": {"B": b'{"dynalock":1,"pid":1e400,"username":"u","host":Infinity,"tab":NaN,"extra":[1]}'},
}
MARKED_UP = {
    "ownerName": {"S": MARKUP},
    "leaseDuration": {"S": "60000"},
    "recordVersionNumber": {"S": MARKUP},
    "data": {"B": LockData(username=MARKUP, purpose=MARKUP, host=MARKUP).to_bytes()},
    "fencingToken": {"N": "5"},
}


def command(*args: str) -> str:
    out = StringIO()
    try:
        call_command("dynalock", *args, stdout=out)
    except CommandError as error:
        return str(error)
    return out.getvalue()


def assert_escaped(html: str) -> None:
    assert MARKUP not in html
    assert "<script>alert" not in html


def assert_terminal_safe(text: str) -> None:
    assert all(char.isprintable() or char in "\n " for char in text), repr(text[:300])


@override_settings(TIME_ZONE="Asia/Tokyo")  # a zone east of UTC: dates near the calendar's end overflow
def test_every_reader_survives_any_item_and_escapes_it(customer, make_staff, django_user_model):
    account = Account.objects.create(name="Acme")
    editor = make_staff("carol", "view_lock", "force_release", "view_customer", "change_customer", "view_account")
    staff_client, anonymous, member = browser(editor), browser(), browser(django_user_model.objects.create_user("m"))
    fixed_keys = [key_for_instance(customer), key_for_instance(account)]
    change_page = f"/admin/desk/customer/{customer.pk}/change/"

    @given(item=items, key=keys)
    @example(item=OVERFLOWING, key="desk.customer:99999999999999999999999")
    @example(item=MARKED_UP, key=MARKUP)
    @example(item=AT_THE_BUDGET, key=MARKUP)
    @example(item={**HOSTILE_PAYLOAD, "data": {"B": b'{"dynalock":1,"pid":1e400}'}}, key="desk.customer:1")
    @example(item={**HOSTILE_PAYLOAD, "data": {"B": b'{"dynalock":1,"pid":Infinity}'}}, key="x")
    @example(item=HOSTILE_PAYLOAD, key="y")
    @example(item={**MARKED_UP, "data": {"B": b'{"dynalock":1,"username":"\\ud800","purpose":"\\udfff"}'}}, key="s")
    @example(item={**OVERFLOWING, "renewedAt": {"N": "1700000000000"}}, key="z")
    @example(item={**MARKED_UP, "waiters": {"S": "not a map"}}, key="w")
    def check(item: dict[str, Any], key: str) -> None:
        written = [key, *fixed_keys]
        for at in written:
            put_item({**item, "key": {"S": at}})
        try:
            pages = [
                staff_client.get(LIVE_LOCKS, {"status": "all"}),
                staff_client.get(LIVE_LOCKS, {"fragment": "1", "status": "all"}),
                staff_client.get(LIVE_LOCKS, {"q": key[:20]}),
                staff_client.get(LIVE_LOCKS, {"q": key[:20], "other_clients": "1"}),
                staff_client.get(RELEASE, {"key": key}),
                staff_client.get(change_page),
            ]
            for page in pages:
                assert page.status_code in (200, 302, 400), page.status_code
                assert_escaped(page.content.decode())
            status = staff_client.get(f"{change_page[: -len('change/')]}edit-lock/status/")
            assert status.status_code == 200
            json.loads(status.content)
            for client in (anonymous, member):
                for accept in ("application/json", "text/html"):
                    locked = client.get(f"/accounts/{account.pk}/deposit/", headers={"accept": accept})
                    assert locked.status_code in (200, 423)
                    if accept == "application/json" and locked.status_code == 423:
                        assert locked["Content-Type"] == "application/json"  # a JSON string, not markup
                        json.loads(locked.content)
                    else:
                        assert_escaped(locked.content.decode())
            text = [command("list"), command("list", "--all"), command("show", "--", key), command("describe")]
            with mock.patch("builtins.input", side_effect=lambda prompt: text.append(prompt) or "n"):
                text.append(command("release", "--force", "--", key))
            for output in text:
                assert_terminal_safe(output)
            for line in command("list", "--all", "--json").splitlines():
                json.loads(line)
        finally:
            for at in written:
                get_client().dynamodb.delete_item(TableName=dynalock_settings.TABLE_NAME, Key={"key": {"S": at}})

    check()
