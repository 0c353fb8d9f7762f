"""A lock item whose ``data`` spells a lone surrogate (``"\\ud800"``): every page shows it, none answers 500.

No UTF-8 page can hold a lone surrogate, so one that reaches a template is a
500 on every page that shows the holder. DynamoDB stores such a payload (a
``B`` attribute is bytes: JSON's ``\\ud800`` escape is plain ASCII), as it
stores invalid UTF-8. moto refuses lone surrogates in ``S`` attributes, as
a UTF-8 store must, so the payload is where they come from. The package
itself wrote them when a purpose came from a JSON request body.
"""

from __future__ import annotations

import json
import time

import pytest
from django.contrib import admin
from django.http import HttpResponse
from django.test import override_settings
from django.urls import include, path

from dynalock_django import lock_object, requires_lock
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import REPLACEMENT, LockData
from testproject.desk.models import Customer

from .admin_support import LIVE_LOCKS, RELEASE, browser, put_item, release_form

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]


@requires_lock(Customer)
def save(request, pk):
    return HttpResponse("saved")


def add_note(request, pk):
    """A view that locks by itself; LockErrorsMiddleware answers its LockTimeout.

    One attempt (``timeout=0``): a wait would join the lock's line, and its entry, left in the background
    when the wait gives up, would hold the released lock for the line until it is gone (a window, if that
    leave's answer is lost on a loaded store) while this test's last request asks for it.
    """
    with lock_object(Customer.objects.get(pk=pk), timeout=0):
        return HttpResponse("added")


urlpatterns = [
    path("admin/", admin.site.urls),
    path("save/<int:pk>/", save),
    path("note/<int:pk>/", add_note),
    path("", include("testproject.desk.urls")),
]
WITH_MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "dynalock_django.middleware.LockErrorsMiddleware",
]

# As another client (or an attacker) may write it: valid ASCII, valid JSON, and lone surrogates in every field.
SURROGATE_PAYLOAD = (
    b'{"dynalock":1,"username":"bob\\ud800","user_id":"\\udfff","purpose":"fix \\ud800",'
    b'"host":"web\\udc00","pid":7,"tab":"\\ud800","extra":{"\\ud800":["\\udfff"]}}'
)
# Invalid UTF-8 (a surrogate as CESU-8 writes it, and a stray byte): DynamoDB's B attribute holds any bytes.
INVALID_UTF8_PAYLOAD = b'{"dynalock":1,"username":"bob\xed\xa0\x80\xff","purpose":"p","host":"h","pid":1}'


def write_item(key: str, data: bytes) -> None:
    now_ms = int(time.time() * 1000)
    put_item(
        {
            "key": {"S": key},
            "ownerName": {"S": "someone-else"},
            "leaseDuration": {"S": "3600000"},
            "recordVersionNumber": {"S": "rvn-1"},
            "fencingToken": {"N": "3"},
            "data": {"B": data},
            "acquiredAt": {"N": str(now_ms - 60_000)},
            "renewedAt": {"N": str(now_ms)},
        }
    )


@pytest.fixture
def carol(make_staff):
    editor = [f"{action}_customer" for action in ("view", "change")]
    return make_staff("carol", "view_lock", "force_release", *editor)


@pytest.mark.parametrize("payload", [SURROGATE_PAYLOAD, INVALID_UTF8_PAYLOAD], ids=["lone-surrogate", "invalid-utf8"])
@override_settings(MIDDLEWARE=WITH_MIDDLEWARE)
def test_every_page_shows_such_an_item_escaped_and_the_lock_can_be_released(payload, carol, customer):
    key = key_for_instance(customer)
    write_item(key, payload)
    client = browser(carol)
    change = f"/admin/desk/customer/{customer.pk}/"
    pages = {
        "@requires_lock's 423": client.get(f"/save/{customer.pk}/"),
        "LockErrorsMiddleware's 423": client.get(f"/note/{customer.pk}/"),
        "the changelist": client.get("/admin/desk/customer/"),
        "the change page": client.get(f"{change}change/"),
        "the take-over page": client.get(f"{change}edit-lock/take-over/"),
        "the live-locks page": client.get(LIVE_LOCKS),
        "its fragment": client.get(LIVE_LOCKS, {"fragment": "1", "status": "all"}),
        "its holder filter": client.get(LIVE_LOCKS, {"holder": f"bob{REPLACEMENT}"}),
        "the release page": client.get(RELEASE, {"key": key}),
        "the demo's customer page": client.get(f"/customers/{customer.pk}/"),
    }
    for name, page in pages.items():
        assert page.status_code in (200, 423), (name, page.status_code)
        html = page.content.decode("utf-8")  # strict: the page is valid UTF-8
        assert f"bob{REPLACEMENT}" in html, name  # shown, the bad text replaced
    status = client.get(f"{change}edit-lock/status/")
    assert f"bob{REPLACEMENT}" in json.loads(status.content)["holder"]
    as_json = client.get(f"/save/{customer.pk}/", headers={"accept": "application/json"})
    assert as_json.status_code == 423
    assert as_json.json()["holder"].startswith(f"bob{REPLACEMENT}")

    released = client.post(RELEASE, release_form(get_client().get(key)))
    assert released.status_code == 302
    assert get_client().get(key).is_released
    assert client.get(f"/save/{customer.pk}/").content == b"saved"


def test_a_lock_taken_with_a_purpose_from_a_json_body_is_stored_repaired(customer):
    purpose = json.loads('{"purpose": "import \\ud800 row"}')["purpose"]  # as a view would read a JSON body
    with lock_object(customer, purpose=purpose):
        stored = get_client().get(key_for_instance(customer))
        assert stored.data is not None
        assert b"\\ud800" not in stored.data  # the table holds no lone surrogate, escaped or not
        assert LockData.from_bytes(stored.data).purpose == f"import {REPLACEMENT} row"


def nested(depth: int) -> bytes:
    """A payload like ours whose ``extra`` nests ``depth`` lists: a kilobyte can exhaust a reader's stack."""
    return (
        b'{"dynalock":1,"username":"bob","purpose":"p","host":"h","pid":1,"extra":{"a":'
        + b"[" * depth
        + b"]" * depth
        + b"}}"
    )


@pytest.mark.parametrize("depth", [450, 1200, 100_000])
@override_settings(MIDDLEWARE=WITH_MIDDLEWARE)
def test_a_payload_nested_too_deep_is_read_as_foreign_on_every_page(depth, carol, customer):
    key = key_for_instance(customer)
    write_item(key, nested(depth))
    client = browser(carol)
    change = f"/admin/desk/customer/{customer.pk}/"
    for url in (
        f"/save/{customer.pk}/",
        f"/note/{customer.pk}/",
        "/admin/desk/customer/",
        f"{change}change/",
        LIVE_LOCKS,
        f"{RELEASE}?key={key}",
    ):
        page = client.get(url)
        assert page.status_code in (200, 423), (url, page.status_code)
        assert "someone-else" in page.content.decode(), url  # named by its owner, as a foreign item is
    released = client.post(RELEASE, release_form(get_client().get(key)))
    assert released.status_code == 302
    assert get_client().get(key).is_released
