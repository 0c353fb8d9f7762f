"""Every URL the package adds to the admin, and @requires_lock's answer, against every method and kind of user.

Only a POST with a valid CSRF token, from a user with the permission, changes
anything in DynamoDB or the database; nothing answers 500. Each URL is set up
once; the one request that may change something (the permitted POST with its
token) goes last, and must change what its URL exists to change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.db.models import F
from django.http import HttpResponse
from django.urls import include, path

from dynalock_django import requires_lock
from dynalock_django.admin.edit_locking.tickets import TICKET_FIELD
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from testproject.desk.models import Customer

from .admin_support import LIVE_LOCKS, RELEASE, browser, held_by, table_items, with_token
from .testapp.models import Account, Tag

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]


@requires_lock(Account)
def deposit(request, pk):
    """Answers 423 while someone else holds the account; any method would write otherwise."""
    Account.objects.filter(pk=pk).update(balance=F("balance") + 1)
    return HttpResponse("deposited")


urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/<int:pk>/deposit/", deposit),
    path("", include("testproject.desk.urls")),
]

METHODS = ["get", "head", "options", "trace", "put", "patch", "delete", "post without token", "post with token"]
ROLES = ["anonymous", "non-staff", "staff without permission", "permitted"]
PERMISSIONS = [
    "view_lock",
    "force_release",
    *(f"{action}_{model}" for model in ("customer", "tag") for action in ("view", "change", "add", "delete")),
]


@dataclass
class Target:
    url: str
    data: dict[str, Any] = field(default_factory=dict)
    changes: bool = False  # what the permitted POST with its token must do


def edit_page_ticket(client, obj) -> str:
    page = client.get(f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/change/")
    return str(page.context["dynalock"]["state"].ticket)


def customer_form(ticket: str) -> dict[str, Any]:
    data = {"name": "Changed", "email": "", "phone": "", "plan": "pro", "_save": "1", TICKET_FIELD: ticket}
    for prefix in ("addresses", "notes"):
        data |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
    return data


def targets(users: dict[str, Any]) -> dict[str, Callable[[], Target]]:
    """Each URL, as a function that sets up what a request to it could change."""
    me = browser(users["permitted"])  # the permitted user's own tab, for the tickets it holds

    def customer() -> Customer:
        return Customer.objects.create(name="Acme", plan="pro")

    def edit_lock(action: str, *, changes: bool = True) -> Callable[[], Target]:
        def setup() -> Target:
            obj = customer()
            ticket = edit_page_ticket(me, obj)
            return Target(f"/admin/desk/customer/{obj.pk}/edit-lock/{action}/", {"ticket": ticket}, changes)

        return setup

    def force_release() -> Target:
        held_by("job-host", "nightly")
        return Target(f"{RELEASE}?key=nightly", {"key": "nightly", "owner": "job-host", "fencing_token": "7"}, True)

    def change_page() -> Target:
        obj = customer()
        return Target(f"/admin/desk/customer/{obj.pk}/change/", customer_form(edit_page_ticket(me, obj)), True)

    def delete_page() -> Target:
        return Target(f"/admin/desk/customer/{customer().pk}/delete/", {"post": "yes"}, True)

    def status() -> Target:
        obj = customer()
        edit_page_ticket(browser(users["alice"]), obj)
        return Target(f"/admin/desk/customer/{obj.pk}/edit-lock/status/")

    def take_over() -> Target:
        obj = customer()
        edit_page_ticket(browser(users["alice"]), obj)
        token = get_client().get(key_for_instance(obj)).fencing_token
        return Target(f"/admin/desk/customer/{obj.pk}/edit-lock/take-over/", {"fencing_token": str(token)}, True)

    def queue(action: str, *, asked: bool) -> Callable[[], Target]:
        """Alice edits a customer; the permitted user asks to edit it (``asked``), or not yet."""

        def setup() -> Target:
            obj = customer()
            edit_page_ticket(browser(users["alice"]), obj)
            url = f"/admin/desk/customer/{obj.pk}/edit-lock/"
            if asked:
                assert me.post(f"{url}ask/", with_token({})).json()["state"] == "waiting"
            return Target(f"{url}{action}/", changes=True)

        return setup

    def list_editable() -> Target:
        Tag.objects.update_or_create(slug="red", defaults={"label": "Red"})
        rows = {"form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "0", "form-0-slug": "red", "form-0-label": "Pink"}
        return Target("/admin/testapp/tag/", {**rows, "form-INITIAL_FORMS": "1", "_save": "Save"}, True)

    def action() -> Target:
        Tag.objects.update_or_create(slug="red", defaults={"label": "Red"})
        return Target("/admin/testapp/tag/", {"action": "mark_reviewed", "_selected_action": ["red"]}, True)

    def locked_response() -> Target:
        account = Account.objects.create(name="Acme")
        held_by("someone-else", key_for_instance(account))
        return Target(f"/accounts/{account.pk}/deposit/")

    return {
        "live locks": lambda: Target(LIVE_LOCKS),
        "live locks fragment": lambda: Target(f"{LIVE_LOCKS}?fragment=1&status=all"),
        "force release": force_release,
        "lock change (log link)": lambda: Target(f"{LIVE_LOCKS}nightly/change/"),
        "lock history": lambda: Target(f"{LIVE_LOCKS}nightly/history/"),
        "lock delete": lambda: Target(f"{LIVE_LOCKS}nightly/delete/"),
        "lock add": lambda: Target(f"{LIVE_LOCKS}add/"),
        "edit-locked change page": change_page,
        "edit-locked delete page": delete_page,
        "edit lock renew": edit_lock("renew"),
        "edit lock check": edit_lock("check", changes=False),  # a look: one read, even when permitted
        "edit lock release": edit_lock("release"),
        "edit lock status": status,
        "edit lock take over": take_over,
        "edit lock ask": queue("ask", asked=False),
        "edit lock wait": queue("wait", asked=True),
        "edit lock leave": queue("leave", asked=True),
        "changelist list_editable": list_editable,
        "changelist action": action,
        "@requires_lock 423": locked_response,
    }


def send(client, method: str, target: Target):
    if method == "post with token":
        return client.post(target.url, with_token(target.data))
    if method == "post without token":
        return client.post(target.url, target.data)
    if method in ("get", "head"):
        separator = "&" if "?" in target.url else "?"
        return getattr(client, method)(f"{target.url}{separator}{urlencode(target.data, doseq=True)}")
    body = urlencode(target.data, doseq=True)
    return getattr(client, method)(target.url, body, content_type="application/x-www-form-urlencoded")


def state() -> tuple[Any, ...]:
    database = {model: list(model.objects.order_by("pk").values()) for model in (Customer, Tag, Account, LogEntry)}
    return table_items(), database


# What some of the refusals must be, beyond "not a 500 and nothing changed".
EXPECTED_STATUS = {
    ("@requires_lock 423", "anonymous", "get"): 423,
    ("lock history", "permitted", "get"): 404,
    ("force release", "permitted", "head"): 200,  # the confirmation page, nothing more
    ("edit lock check", "permitted", "post with token"): 200,
}
TARGETS = [
    "live locks",
    "live locks fragment",
    "force release",
    "lock change (log link)",
    "lock history",
    "lock delete",
    "lock add",
    "edit-locked change page",
    "edit-locked delete page",
    "edit lock renew",
    "edit lock check",
    "edit lock release",
    "edit lock status",
    "edit lock take over",
    "edit lock ask",
    "edit lock wait",
    "edit lock leave",
    "changelist list_editable",
    "changelist action",
    "@requires_lock 423",
]


@pytest.fixture
def users(make_staff) -> dict[str, Any]:
    return {
        "non-staff": make_staff("nadia", *PERMISSIONS, is_staff=False),
        "staff without permission": make_staff("sam"),
        "permitted": make_staff("pat", *PERMISSIONS),
        "alice": make_staff("alice", *PERMISSIONS),
    }


def test_the_matrix_covers_every_url_the_package_adds(users):
    assert list(targets(users)) == TARGETS
    assert {name for name, _, _ in EXPECTED_STATUS} <= set(TARGETS)


# One test per URL: each sets up its URL once and sends it every method as every kind of user.
@pytest.mark.parametrize("name", TARGETS)
def test_only_a_permitted_post_with_its_token_changes_anything(users, name):
    clients = {role: browser(users.get(role)) for role in ROLES}
    statuses: dict[tuple[str, str], int] = {}
    target = targets(users)[name]()
    before = state()
    for role in ROLES:
        for method in METHODS:
            if (role, method) == ("permitted", "post with token"):
                continue
            response = send(clients[role], method, target)
            statuses[(role, method)] = response.status_code
            assert response.status_code < 500, (name, role, method, response.status_code)
            assert state() == before, f"{name}: {method} by {role} changed something"
    response = send(clients["permitted"], "post with token", target)
    statuses[("permitted", "post with token")] = response.status_code
    assert response.status_code < 500, (name, response.status_code)
    assert (state() != before) == target.changes, (
        f"{name}: the permitted POST {'did not change' if target.changes else 'changed'} it"
    )
    expected = {(role, method): code for (url, role, method), code in EXPECTED_STATUS.items() if url == name}
    assert {key: statuses[key] for key in expected} == expected
