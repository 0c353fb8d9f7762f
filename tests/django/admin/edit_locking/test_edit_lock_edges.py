"""Edit locks at the edges: pks too long for a DynamoDB key, DynamoDB failing, paths that could inject cookies,
and what the views leave behind on the request and on the registered admin."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Group

from dynalock_django.admin.edit_locking.tickets import HANDOFF_COOKIE, TICKET_FIELD
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance

from ....dynamodb_support import FaultInjector
from ...admin_support import browser, with_token
from ...testapp.models import Tag, Topic

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

EDITOR = [f"{action}_{model}" for model in ("tag", "topic", "group") for action in ("view", "change", "delete")]


@pytest.fixture
def alice(make_staff):
    return make_staff("alice", *EDITOR)


@pytest.fixture
def carol(make_staff):
    return make_staff("carol", *EDITOR, "force_release")


def test_an_object_whose_key_would_be_too_long_can_be_edited_and_deleted(alice):
    topic = Topic.objects.create(name="😀" * 255)  # 12 bytes per character once percent-encoded
    base = f"/admin/testapp/topic/{quote(topic.pk)}"
    client = browser(alice)
    page = client.get(f"{base}/change/")
    assert page.status_code == 200
    ticket = page.context["dynalock"]["state"].ticket
    assert ticket is not None
    assert not get_client().get(key_for_instance(topic)).is_released
    assert client.get(f"{base}/edit-lock/status/").json()["state"] == "held"
    assert client.get(f"{base}/delete/").status_code == 200
    client.post(f"{base}/edit-lock/release/", with_token({"ticket": str(ticket)}))
    assert client.post(f"{base}/delete/", with_token({"post": "yes"})).status_code == 302
    assert not Topic.objects.exists()


def test_take_over_answers_503_when_dynamodb_fails(alice, carol):
    tag = Tag.objects.create(slug="red")
    browser(alice).get(f"/admin/testapp/tag/{tag.pk}/change/")
    client = browser(carol)
    url = f"/admin/testapp/tag/{tag.pk}/edit-lock/take-over/"
    faults = FaultInjector(get_client().dynamodb)
    faults.fail("GetItem", "InternalServerError", status=500)
    page = client.get(url)
    assert page.status_code == 503
    assert "Editing is paused: the lock service is not answering." in page.content.decode()  # DynamoDB failing
    assert "InternalServerError" not in page.content.decode()
    token = get_client().get(key_for_instance(tag)).fencing_token
    faults.fail("UpdateItem", "ThrottlingException")
    assert client.post(url, with_token({"fencing_token": str(token)})).status_code == 503
    assert get_client().get(key_for_instance(tag)).fencing_token == token  # still alice's


def test_the_handoff_cookie_path_cannot_carry_attributes(alice):
    tag = Tag.objects.create(slug="x;Domain=evil.example;Secure")
    url = "/admin/testapp/tag/x%3BDomain=evil.example%3BSecure/change/"  # a path with ";" in it
    client = browser(alice)
    ticket = client.get(url).context["dynalock"]["state"].ticket
    form = {"slug": tag.slug, "label": "", "_continue": "1", TICKET_FIELD: str(ticket)}
    response = client.post(url, with_token(form))
    assert response.status_code == 302
    cookie = response.cookies[HANDOFF_COOKIE]
    assert cookie["path"].startswith("/admin/testapp/tag/x%3BDomain")  # the path, escaped
    assert ";" not in cookie["path"]
    assert "Domain=evil" not in cookie.OutputString()


def test_the_views_keep_nothing_on_the_request_or_on_the_registered_admin(alice):
    """What a request decides stays with that request: shared objects look as they did before it."""
    Tag.objects.create(slug="red", label="Red")
    group = Group.objects.create(name="support")
    tag_admin = admin.site.get_model_admin(Tag)
    registered = dict(vars(tag_admin))
    client = browser(alice)
    plain = f"/admin/auth/group/{group.pk}/change/"  # an admin without edit locks
    saved = client.post(plain, with_token({"name": "support"}))
    django_sets = {*vars(client.get(plain).wsgi_request), *vars(saved.wsgi_request)}

    ticket = client.get("/admin/testapp/tag/red/change/").context["dynalock"]["state"].ticket
    requests = [
        client.get("/admin/testapp/tag/red/change/"),  # read-only: the first page holds the lock
        client.post("/admin/testapp/tag/red/change/", with_token({"slug": "red", "label": "x", TICKET_FIELD: "x"})),
        client.post("/admin/testapp/tag/red/change/", with_token({"slug": "red", "label": "y", TICKET_FIELD: ticket})),
        client.post("/admin/testapp/tag/", with_token({"action": "mark_reviewed", "_selected_action": ["red"]})),
    ]
    for response in requests:
        assert response.status_code in (200, 302)
        assert set(vars(response.wsgi_request)) - django_sets == set()
    assert Tag.objects.get().label == "reviewed"  # each request did its work
    assert vars(tag_admin) == registered
