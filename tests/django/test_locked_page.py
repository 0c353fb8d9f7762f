"""The 423 page of ``@requires_lock`` and ``LockErrorsMiddleware``: for people.

Styled like the admin without needing it; when (a date, not an ISO string) and what (staff words, not a
purpose code); when to try again, from the holder's remaining lease, agreeing with ``Retry-After``; a
way back; and a POST's typed fields kept, to send again with a fresh CSRF token.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpResponse
from django.test import Client, override_settings
from django.urls import include, path, re_path
from django.utils import dateformat, formats, timezone
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.debug import sensitive_post_parameters

from dynalock_django import requires_lock
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData
from testproject.desk.models import Customer

from .admin_support import CSRF_TOKEN, browser, put_item, with_token

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]
received: list[dict[str, list[str]]] = []


@requires_lock(Customer)
def rename(request, pk):
    received.append(dict(request.POST.lists()))
    return HttpResponse("saved")


urlpatterns = [path("customers/<int:pk>/rename/", rename), path("", include("testproject.desk.urls"))]


def held_for(customer, *, lease_s: int, renewed_s_ago: int, purpose: str = "edit", username: str = "alice") -> None:
    """Held by ``username`` (as another server wrote it) since an hour ago, last renewed ``renewed_s_ago``."""
    now_ms = int(time.time() * 1000)
    put_item(
        {
            "key": {"S": key_for_instance(customer)},
            "ownerName": {"S": "django-user:9/tab:x"},
            "leaseDuration": {"S": str(lease_s * 1000)},
            "recordVersionNumber": {"S": "rvn"},
            "fencingToken": {"N": "4"},
            "data": {"B": LockData(purpose=purpose, username=username).to_bytes()},
            "acquiredAt": {"N": str(now_ms - 3_600_000)},
            "renewedAt": {"N": str(now_ms - renewed_s_ago * 1000)},
        }
    )


@pytest.fixture
def mia(django_user_model):
    return browser(django_user_model.objects.create_user("mia"))


class Forms(HTMLParser):
    """The page's forms: their hidden inputs, in order, and the links."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden: list[tuple[str, str]] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if tag == "input" and found.get("type") == "hidden":
            self.hidden.append((found["name"], found["value"]))
        if tag == "a":
            self.links.append(found["href"])


def parsed(response) -> Forms:
    forms = Forms()
    forms.feed(response.content.decode())
    return forms


@override_settings(TIME_ZONE="Asia/Tokyo")
def test_the_page_says_who_does_what_since_when_in_words_and_dates_not_codes(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    page = mia.get(f"/customers/{customer.pk}/rename/")
    assert page.status_code == 423
    since = page.context["since"]
    assert isinstance(since, datetime)  # the template formats it, with the project's formats
    html = page.content.decode()
    shown = dateformat.format(timezone.localtime(since), formats.get_format("TIME_FORMAT"))
    assert f"alice has been editing it since {shown}" in html
    assert "1\xa0hour" in html  # how long ago, by timesince
    assert "(edit)" not in html
    stored = get_client().get(key_for_instance(customer))
    assert stored.acquired_at.isoformat() not in html  # no raw ISO timestamp
    assert "<style>" in html  # a styled page of its own, whatever the view (no admin context needed)


@pytest.mark.parametrize(
    ("lease_s", "renewed_s_ago", "words"),
    [(600, 100, "9 minutes"), (3600, 0, "60 minutes"), (7200, 0, "2 hours"), (90, 50, "40 seconds")],
)
def test_try_again_comes_from_the_holders_remaining_lease_in_words_that_agree_with_retry_after(
    mia, customer, lease_s, renewed_s_ago, words
):
    held_for(customer, lease_s=lease_s, renewed_s_ago=renewed_s_ago)
    page = mia.get(f"/customers/{customer.pk}/rename/")
    retry_after = int(page["Retry-After"])
    remaining = lease_s - renewed_s_ago
    assert remaining - 2 <= retry_after <= remaining  # seconds pass between writing the item and the request
    assert page.context["retry_after"] == retry_after
    html = page.content.decode()
    assert f"Try again in {words} (at" in html or f"Try again in {words[:-1]}" in html, html
    retry_at = page.context["retry_at"]
    assert abs((retry_at - datetime.now(UTC)).total_seconds() - retry_after) < 5


def test_a_holder_whose_clock_runs_ahead_is_not_waited_for_longer_than_its_lease(mia, customer):
    held_for(customer, lease_s=120, renewed_s_ago=-3600)  # renewed "an hour from now"
    assert int(mia.get(f"/customers/{customer.pk}/rename/")["Retry-After"]) == 120


def test_the_way_back_is_the_page_they_came_from_on_this_site_else_the_objects_page(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    url = f"/customers/{customer.pk}/rename/"
    came_from = parsed(mia.get(url, headers={"referer": "http://testserver/customers/?page=2"}))
    assert "http://testserver/customers/?page=2" in came_from.links
    assert url in came_from.links  # and "Try again"
    elsewhere = parsed(mia.get(url, headers={"referer": "https://evil.example/phish"}))
    assert not any("evil" in link for link in elsewhere.links)
    assert customer.get_absolute_url() in elsewhere.links


def test_a_refused_post_keeps_what_was_typed_to_send_again_with_a_fresh_csrf_token(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    url = f"/customers/{customer.pk}/rename/"
    typed = {"name": 'Acme <b>"Ltd"</b>', "tags": ["vip", "late payer"], "note": "call back\non Monday"}
    page = mia.post(url, with_token(typed))
    assert page.status_code == 423
    html = page.content.decode()
    assert "Your changes were not saved." in html
    assert "<b>" not in html  # escaped
    form = parsed(page).hidden
    [(_, token)] = [field for field in form if field[0] == "csrfmiddlewaretoken"]
    assert len(token) == 64  # a fresh masked token for this session
    assert token != CSRF_TOKEN
    fields = [field for field in form if field[0] != "csrfmiddlewaretoken"]
    assert fields == [("name", typed["name"]), ("tags", "vip"), ("tags", "late payer"), ("note", typed["note"])]

    get_client().dynamodb.delete_item(
        TableName=get_client().table_name, Key={"key": {"S": key_for_instance(customer)}}
    )  # the holder is done
    received.clear()
    again: dict[str, list[str]] = {}
    for name, value in form:
        again.setdefault(name, []).append(value)
    assert mia.post(url, again).content == b"saved"  # CSRF-checked: the page's token is accepted
    [sent] = received
    assert {name: values for name, values in sent.items() if name != "csrfmiddlewaretoken"} == {
        "name": [typed["name"]],
        "tags": typed["tags"],
        "note": [typed["note"]],
    }


def test_a_refused_upload_says_the_files_must_be_attached_again(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    page = mia.post(
        f"/customers/{customer.pk}/rename/", with_token({"name": "x", "logo": SimpleUploadedFile("logo.png", b"png")})
    )
    assert "Files you attached are not kept" in page.content.decode()
    assert ("name", "x") in parsed(page).hidden


def test_secret_looking_fields_are_never_echoed_into_the_page(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    typed = {"name": "Acme", "password": "hunter2", "card_number": "4111111111111111", "api_token": "t0k"}
    page = mia.post(f"/customers/{customer.pk}/rename/", with_token(typed))
    html = page.content.decode()
    for secret in ("hunter2", "4111111111111111", "t0k"):
        assert secret not in html
    assert [field for field in parsed(page).hidden if field[0] != "csrfmiddlewaretoken"] == [("name", "Acme")]
    assert "secret fields are not kept" in html


@csrf_exempt
@requires_lock(Customer)
def exempt_rename(request, pk):
    return HttpResponse("saved")


urlpatterns.append(path("customers/<int:pk>/exempt-rename/", exempt_rename))


def test_no_fresh_csrf_token_for_a_post_that_did_not_pass_the_csrf_check_or_is_anonymous(django_user_model, customer):
    """Else a cross-site POST's fields would come back on a same-site form, one click from being sent."""
    held_for(customer, lease_s=600, renewed_s_ago=0)
    mia = Client(enforce_csrf_checks=True)
    mia.force_login(django_user_model.objects.create_user("mia"))
    exempt = mia.post(f"/customers/{customer.pk}/exempt-rename/", {"name": "from another site"})
    anonymous = Client().post(f"/customers/{customer.pk}/rename/", {"name": "anonymous"})
    for page in (exempt, anonymous):
        assert page.status_code == 423
        assert "Send my changes again" not in page.content.decode()
        assert "csrfmiddlewaretoken" not in page.content.decode()


@requires_lock(Customer)
@sensitive_post_parameters("pet_name")
def lock_above_sensitive(request, pk):
    return HttpResponse("saved")


@sensitive_post_parameters("pet_name")
@requires_lock(Customer)
def sensitive_above_lock(request, pk):
    return HttpResponse("saved")


@requires_lock(Customer, sensitive=["pet_name"])
def lock_told_sensitive(request, pk):
    return HttpResponse("saved")


@requires_lock(Customer)
class SensitiveHandler(View):
    @method_decorator(sensitive_post_parameters("pet_name"))
    def post(self, request, pk):
        return HttpResponse("saved")


@requires_lock(Customer)
@sensitive_post_parameters()
async def all_sensitive(request, pk):
    return HttpResponse("saved")


urlpatterns += [
    path("customers/<int:pk>/lock-above/", lock_above_sensitive),
    path("customers/<int:pk>/sensitive-above/", sensitive_above_lock),
    path("customers/<int:pk>/told/", lock_told_sensitive),
    path("customers/<int:pk>/handler/", SensitiveHandler.as_view()),
    path("customers/<int:pk>/all-sensitive/", all_sensitive),
]


@pytest.mark.parametrize("view", ["lock-above", "sensitive-above", "told", "handler"])
def test_fields_the_view_marks_sensitive_are_not_echoed_whatever_the_decorators_order(mia, customer, view):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    page = mia.post(f"/customers/{customer.pk}/{view}/", with_token({"name": "Acme", "pet_name": "Rex"}))
    assert page.status_code == 423
    assert "Rex" not in page.content.decode()
    assert [field for field in parsed(page).hidden if field[0] != "csrfmiddlewaretoken"] == [("name", "Acme")]


def test_a_view_whose_every_field_is_sensitive_offers_nothing_to_send_again(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    page = mia.post(f"/customers/{customer.pk}/all-sensitive/", with_token({"name": "Acme"}))
    assert page.status_code == 423
    assert "Acme" not in page.content.decode()
    assert "Send my changes again" not in page.content.decode()


def test_keys_recovery_codes_and_security_answers_are_not_echoed(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    typed = {"api_key": "k1", "private_key": "k2", "recovery_code": "c3", "security_answer": "a4", "name": "Acme"}
    page = mia.post(f"/customers/{customer.pk}/rename/", with_token(typed))
    assert [field for field in parsed(page).hidden if field[0] != "csrfmiddlewaretoken"] == [("name", "Acme")]


def test_sensitive_takes_a_list_of_names_not_one_string():
    with pytest.raises(TypeError, match=r"sensitive=\['api_key'\]"):
        requires_lock(Customer, sensitive="pet_name")


urlpatterns.append(re_path(r"^.*?(?P<pk>\d+)/$", rename))  # a catch-all route, as a site's last one may be


def test_try_again_stays_on_this_site_for_a_path_that_starts_with_two_slashes(mia, customer):
    held_for(customer, lease_s=600, renewed_s_ago=0)
    page = mia.get("/", PATH_INFO=f"//evil.example/{customer.pk}/")
    assert page.status_code == 423
    assert f"/%2Fevil.example/{customer.pk}/" in parsed(page).links
    assert not any(link.startswith("//") for link in parsed(page).links)
