from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission

from dynalock_django.client import get_client
from dynalock_django.dynamodb import LockClient
from dynalock_django.testing import lock_table
from testproject.desk.models import Customer

from ..dynamodb_support import HEARTBEAT, LEASE, REFRESH, RequestCounter, make_dynamodb, short_lease_client

# Short leases, one attempt per call: as in the protocol tests.
FAST = {
    "LEASE_DURATION": LEASE,
    "HEARTBEAT_PERIOD": HEARTBEAT,
    "REFRESH_PERIOD": REFRESH,
    "BOTO_CONFIG": {"connect_timeout": 0.25, "read_timeout": 0.5, "retries": {"total_max_attempts": 1}},
}


@pytest.fixture(autouse=True)
def dynalock(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Every Django-layer test runs against its own lock table on the local endpoint."""
    with lock_table(**FAST) as settings:
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
