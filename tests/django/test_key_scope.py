"""``DYNALOCK["KEY_SCOPE"]``: keys scoped per tenant (issue 42).

django-tenants needs PostgreSQL, which the suite does not have: its default (the connection's
``schema_name``) is tested with that attribute set on the connection and the app reported
installed; an explicit scope callable is tested for real, on the in-process store.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.core.checks import CheckMessage
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from dynalock_django import lock_key, lock_object
from dynalock_django.checks import check_settings
from dynalock_django.client import get_client
from dynalock_django.exceptions import InvalidLockRequest
from dynalock_django.keys import key_for_instance, key_for_name, parse_key
from dynalock_django.tasks import lock_task
from testproject.desk.models import Customer

from .admin_support import LIVE_LOCKS, logged_in

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]

_tenant = threading.local()


def thread_scope() -> str:
    """The scope callable of these tests: the tenant the calling thread works for."""
    return getattr(_tenant, "name", "")


@contextlib.contextmanager
def as_tenant(name: str) -> Iterator[None]:
    before = thread_scope()
    _tenant.name = name
    try:
        yield
    finally:
        _tenant.name = before


@contextlib.contextmanager
def scoped(path: str | None = f"{__name__}.thread_scope") -> Iterator[None]:
    with override_settings(DYNALOCK={**django_settings.DYNALOCK, "KEY_SCOPE": path}):
        yield


def pretend_django_tenants_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    is_installed = apps.is_installed
    monkeypatch.setattr(apps, "is_installed", lambda name: name == "django_tenants" or is_installed(name))


def ids(messages: list[CheckMessage]) -> set[str]:
    return {str(message.id) for message in messages}


@contextlib.contextmanager
def lock_held_by(tenant: str, row: Customer) -> Iterator[None]:
    with as_tenant(tenant):
        lease = lock_object(row).acquire()
    try:
        yield
    finally:
        lease.release()


@contextlib.contextmanager
def lock_held_by_key(tenant: str, name: str) -> Iterator[None]:
    with as_tenant(tenant):
        lease = lock_key(name, purpose="job").acquire()
    try:
        yield
    finally:
        lease.release()


@pytest.fixture
def order() -> Customer:
    return Customer.objects.create(pk=5, name="Order five")


def test_two_tenants_lock_their_row_pk_5_at_once_and_both_are_granted(order):
    barrier = threading.Barrier(2, timeout=30)
    granted: dict[str, tuple[str, int]] = {}

    def edit(tenant: str) -> None:
        with as_tenant(tenant), lock_object(order, timeout=0) as lease:
            barrier.wait()  # both hold their lock at this moment
            granted[tenant] = (lease.key, lease.fencing_token)
            barrier.wait()

    with scoped():
        threads = [threading.Thread(target=edit, args=(tenant,)) for tenant in ("tenant_a", "tenant_b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert granted["tenant_a"][0] == "tenant_a|desk.customer:5"
    assert granted["tenant_b"][0] == "tenant_b|desk.customer:5"


def test_every_key_of_the_django_layer_carries_the_scope_and_reads_back_without_it(order):
    @lock_task()
    def nightly(account: int) -> str | None:
        return None

    with scoped(), as_tenant("tenant_a"):
        assert key_for_name("billing-leader") == "tenant_a|billing-leader"
        assert parse_key(key_for_instance(order)).model is Customer
        assert parse_key(key_for_instance(order)).scope == "tenant_a"
        nightly(1)
    with scoped():  # no tenant: the public schema's keys are unscoped
        assert key_for_name("billing-leader") == "billing-leader"
    assert get_client().get(f"tenant_a|{__name__}.{nightly.__qualname__}(account=1)") is not None


def test_by_default_with_django_tenants_the_scope_is_the_connections_schema(order, monkeypatch):
    pretend_django_tenants_is_installed(monkeypatch)
    monkeypatch.setattr("django.db.connection", SimpleNamespace(schema_name="tenant_a"))
    assert key_for_instance(order) == "tenant_a|desk.customer:5"
    monkeypatch.setattr("django.db.connection", SimpleNamespace(schema_name="public"))
    assert key_for_instance(order) == "desk.customer:5"


def test_without_django_tenants_the_default_is_no_scope(order, monkeypatch):
    monkeypatch.setattr("django.db.connection", SimpleNamespace(schema_name="tenant_a"))
    assert key_for_instance(order) == "desk.customer:5"


def test_a_scope_that_is_no_scope_is_refused_with_the_setting_named(order):
    with scoped(), as_tenant("a|b"), pytest.raises(InvalidLockRequest, match=r"KEY_SCOPE.*returned 'a\|b'"):
        key_for_instance(order)


def test_the_live_locks_page_of_tenant_a_does_not_show_tenant_bs_lock(order, make_staff):
    viewer = make_staff("vera", "view_lock", "view_customer")
    with (
        scoped(),
        lock_held_by_key("tenant_b", "b-only-job"),
        as_tenant("tenant_a"),
        lock_key("a-only-job", purpose="job"),  # each item is entered before the next is made
    ):
        html = logged_in(viewer).get(LIVE_LOCKS).content.decode()  # tenant A's page
        with as_tenant(""):
            public = logged_in(viewer).get(LIVE_LOCKS).content.decode()  # the public schema's
    assert "a-only-job" in html
    assert "b-only-job" not in html
    assert "b-only-job" not in public
    assert "a-only-job" not in public


def test_dynalock_list_and_show_keep_to_the_current_scope_unless_asked_for_all(order, capsys):
    with scoped(), lock_held_by("tenant_b", order):
        call_command("dynalock", "list")
        public = capsys.readouterr().out
        call_command("dynalock", "list", "--all-scopes")
        every = capsys.readouterr().out
        with pytest.raises(CommandError, match="not of the current KEY_SCOPE"):
            call_command("dynalock", "show", "tenant_b|desk.customer:5")
        call_command("dynalock", "show", "tenant_b|desk.customer:5", "--all-scopes")
        shown = capsys.readouterr().out
    assert "tenant_b|desk.customer:5" not in public
    assert "tenant_b|desk.customer:5" in every
    assert "tenant_b" in shown


def test_check_w006_warns_when_django_tenants_is_installed_with_the_scope_turned_off(monkeypatch):
    pretend_django_tenants_is_installed(monkeypatch)
    with scoped(None):
        assert "dynalock.W006" in ids(check_settings())
    assert "dynalock.W006" not in ids(check_settings())  # "auto", the default: scoped by schema


@pytest.mark.parametrize("path", ["no.such.module.scope", 42, "django.conf.settings"])
def test_check_e032_refuses_a_scope_that_is_no_callable(path):
    with scoped(path):
        assert "dynalock.E032" in ids(check_settings())
    assert "dynalock.E032" not in ids(check_settings())
