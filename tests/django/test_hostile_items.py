"""Items written by someone else: dates past the calendar, keys no row has, escape sequences, forged log lines.

Every reader — the live-locks page, its fragment, the release page, the change page's
banner, ``manage.py dynalock`` — shows them, escaped, instead of failing.
"""

from __future__ import annotations

import logging
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from dynalock_django import lock_model
from dynalock_django.client import get_client
from dynalock_django.exceptions import InvalidLockRequest
from dynalock_django.keys import key_for_instance
from testproject.desk.models import Customer

from .admin_support import LIVE_LOCKS, RELEASE, browser, put_item

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

LAST_MILLISECOND = "253402300799999"  # 9999-12-31T23:59:59.999Z: any zone east of UTC is past year 9999


def overflowing(key):
    return {
        "key": {"S": key},
        "ownerName": {"S": "someone"},
        "leaseDuration": {"S": "999999999999999999"},  # 31 million years
        "recordVersionNumber": {"S": "1"},
        "fencingToken": {"N": "3"},
        "acquiredAt": {"N": LAST_MILLISECOND},
        "renewedAt": {"N": LAST_MILLISECOND},
    }


def dynalock_output(*args):
    out = StringIO()
    call_command("dynalock", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def carol(make_staff):
    editor = [f"{action}_customer" for action in ("view", "change")]
    return make_staff("carol", "view_lock", "force_release", *editor)


@override_settings(TIME_ZONE="Asia/Tokyo")
def test_dates_past_year_9999_and_endless_leases_are_shown_and_can_be_cleared(carol, customer):
    key = key_for_instance(customer)
    put_item(overflowing(key))
    client = browser(carol)
    assert client.get(LIVE_LOCKS).status_code == 200
    assert client.get(LIVE_LOCKS, {"fragment": "1", "status": "all"}).status_code == 200
    assert client.get(RELEASE, {"key": key}).status_code == 200
    banner = client.get(f"/admin/desk/customer/{customer.pk}/change/")
    assert banner.status_code == 200
    assert "Being edited by someone since ?" in banner.content.decode()
    assert key in dynalock_output("list")
    assert "1e+15s" in dynalock_output("show", key)
    assert "Released" in dynalock_output("release", key, "--force", "--yes")
    assert get_client().get(key).is_released


def test_out_of_range_integer_pks_are_refused_and_such_keys_still_list(carol):
    with pytest.raises(InvalidLockRequest, match="not a valid primary key for Customer"):
        lock_model(Customer, "99999999999999999999999")
    put_item(overflowing("desk.customer:99999999999999999999999"))  # written by hand, or by an older version
    page = browser(carol).get(LIVE_LOCKS)
    assert page.status_code == 200
    assert "desk.customer:99999999999999999999999" in page.content.decode()
    assert "desk.customer:99999999999999999999999" in dynalock_output("list")


HOSTILE = "evil\x1b]0;pwned\x07\x1b[2K\rbob\nforged line \u202e"


def test_the_command_prints_table_data_terminal_safe(monkeypatch):
    item = overflowing(f"job-{HOSTILE}")
    item["ownerName"] = {"S": HOSTILE}
    put_item(item)
    key = item["key"]["S"]
    printed = dynalock_output("list") + dynalock_output("show", key)
    asked = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "n")
    with pytest.raises(Exception, match="Not released"):
        dynalock_output("release", key, "--force")
    for text in (printed, *asked):
        assert all(char.isprintable() or char in "\n " for char in text), repr(text)
    assert "\\x1b]0;pwned\\x07" in printed  # shown, escaped
    assert "\\nforged line \\u202e" in printed
    as_json = dynalock_output("list", "--json")
    assert HOSTILE in as_json.encode().decode("unicode_escape")  # --json carries it exactly, JSON-escaped


def test_table_data_cannot_forge_log_lines(caplog):
    caplog.set_level(logging.INFO, logger="dynalock_django")
    lease = get_client().acquire("job")
    forged = "carol\n2026-01-01 ERROR forged"
    get_client().force_release(get_client().get("job"), released_by=forged)
    assert lease.wait_until_lost(2.0)
    messages = [record.getMessage() for record in caplog.records if record.name.startswith("dynalock_django")]
    assert messages
    assert not any("\n" in message for message in messages), messages
    assert any("carol\\n2026-01-01 ERROR forged" in message for message in messages)
