from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from dynalock_django import client as client_module
from dynalock_django.client import get_client
from dynalock_django.conf import dynalock_settings
from dynalock_django.dynamodb import LockClient
from dynalock_django.testing import lock_table
from testproject.desk.models import Customer

from ..dynamodb_support import MEMORY_URL, SHORT_LEASE_SETTINGS, RequestCounter, make_dynamodb, short_lease_client
from ..stores import shared_endpoint_url
from .admin_support import DESK_EDITOR

# The models whose rows the suite reads shared (lock_object(row, shared=True)); rows of the others have no readers.
SHARED_ROWS = {"SHARED_LOCK_MODELS": ["testapp.Account", "testapp.Topic", "desk.Customer"]}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``@pytest.mark.uses_dynalock`` (or a module's ``pytestmark``) gives each of its tests the ``dynalock`` fixture.

    Set up first, as a fixture the test names would be. Tests without it get no table: their DYNALOCK
    (tests/settings.py) names none, so one that reaches for DynamoDB fails at once.
    """
    for item in items:
        names = getattr(item, "fixturenames", None)
        if item.get_closest_marker("uses_dynalock") and names is not None and "dynalock" not in names:
            item.fixturenames = ["dynalock", *names]  # type: ignore[attr-defined]


@pytest.fixture
def dynalock(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """DYNALOCK pointed at a lock table of this test's own, with the suite's short leases: on the in-process
    store, or on the local endpoint for a test whose other processes need a server (``@pytest.mark.processes``)
    or that is about the endpoint itself (``@pytest.mark.stores``: its checks, a proxy in front of it), and for
    the chaos runs' workers."""
    if any(request.node.get_closest_marker(tier) for tier in ("processes", "stores", "chaos")):
        shared_endpoint_url()  # started here unless already: lock_table uses it
        with lock_table(**SHORT_LEASE_SETTINGS, **SHARED_ROWS) as settings:
            yield settings
        return
    from_settings = client_module.get_dynamodb

    def in_memory_or_from_settings() -> Any:
        endpoint_url = dynalock_settings.ENDPOINT_URL
        return make_dynamodb(endpoint_url) if endpoint_url == MEMORY_URL else from_settings()

    monkeypatch.setattr(client_module, "get_dynamodb", in_memory_or_from_settings)
    with lock_table(**SHORT_LEASE_SETTINGS, **SHARED_ROWS, ENDPOINT_URL=MEMORY_URL) as settings:
        yield settings


@pytest.fixture
def other_holder(dynalock: dict[str, Any]) -> Iterator[LockClient]:
    """Another process's client on the same table (say, Bob's server)."""
    client = short_lease_client(make_dynamodb(dynalock["ENDPOINT_URL"]), dynalock["TABLE_NAME"])
    yield client
    client.close(release=False)


@pytest.fixture
def requests_made() -> RequestCounter:
    return RequestCounter(get_client().dynamodb)


@pytest.fixture
def make_staff(django_user_model: Any) -> Callable[..., Any]:
    """Build a staff user (password "pw") with the permissions named by ``codenames``.

    ``make_staff("carol", "view_lock", "force_release")``; extra fields go to ``create_user``
    (``is_superuser=True``, or ``is_staff=False`` for someone who has the permissions but not the status).
    """

    def build(username: str, *codenames: str, **fields: Any) -> Any:
        fields.setdefault("is_staff", True)
        user = django_user_model.objects.create_user(username, password="pw", **fields)
        user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
        return user

    return build


@pytest.fixture
def customer() -> Customer:
    """The demo's customer every admin test edits."""
    return Customer.objects.create(name="Acme", plan="pro")


@pytest.fixture
def alice(make_staff: Callable[..., Any]) -> Any:
    """A support-desk editor (customers, addresses, notes); modules that need other rights define their own."""
    return make_staff("alice", *DESK_EDITOR)


@pytest.fixture
def bob(make_staff: Callable[..., Any]) -> Any:
    """A second desk editor: ``browser(bob)`` acts while alice's change pages hold their locks."""
    return make_staff("bob", *DESK_EDITOR)
