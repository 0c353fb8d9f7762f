from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import settings

from dynalock_django.dynamodb import LockClient

from .dynamodb_limits import LimitGuard, install
from .dynamodb_support import ENDPOINT_ENV, make_dynamodb, short_lease_client, unique
from .shares import part
from .stores import MEMORY, Store, Stores, missing, process_store_names, store_names

# moto accepts any credentials; real endpoints use the normal boto3 chain.
if not os.environ.get(ENDPOINT_ENV):
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


pytest_plugins = ["dynalock_django.testing"]

# Every DynamoDB request of every botocore session the run creates is checked against DynamoDB's limits
# (tests/dynamodb_limits.py); installed here, before any test builds a client.
LIMITS = LimitGuard()
install(LIMITS)

# Property tests: a few dozen examples per test keep the suite quick (CI runs it twice);
# DYNALOCK_HYPOTHESIS_PROFILE=thorough explores far more. No deadline: requests to a local server vary.
settings.register_profile("default", max_examples=25, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("DYNALOCK_HYPOTHESIS_PROFILE", "default"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store",
        action="append",
        choices=[*store_names(), MEMORY],
        help="Run the tests that take an endpoint (tests/dynamodb, the installed package) on this store only "
        f"(default: each of {', '.join(store_names())}); repeat for several.",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test about stores (``stores``) runs once per store of the run, one that needs a server
    (``processes``) once per store of :func:`.process_store_names`; every other test that uses a store runs
    on the in-process one (``--store`` chooses for all)."""
    if "store" in metafunc.fixturenames:
        if metafunc.definition.get_closest_marker("stores"):
            names = store_names()
        elif metafunc.definition.get_closest_marker("processes"):
            names = process_store_names()
        else:
            names = [MEMORY]
        metafunc.parametrize("store", metafunc.config.getoption("store") or names, indirect=True, scope="session")


# K/N: run the Kth of N shares of the browser tests (other_shares_of_browser_tests).
BROWSER_PART_ENV = "DYNALOCK_TEST_BROWSER_PART"
TIERS = ("unit", "protocol", "stores", "django", "browser", "processes", "chaos")


def default_tier(path: str) -> str:
    """The tier of a test that names none: its folder's (tests/README.md)."""
    if "browser" in path.rsplit("/", 1)[-1]:
        return "browser"
    for folder, tier in (("tests/chaos/", "chaos"), ("tests/installed/", "processes"), ("tests/django/", "django")):
        if folder in path:
            return tier
    return "protocol" if "tests/dynamodb/" in path else "unit"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not any(item.get_closest_marker(tier) for tier in TIERS):
            item.add_marker(default_tier(item.path.as_posix()))
        name = getattr(item, "callspec", None) and item.callspec.params.get("store")  # type: ignore[attr-defined]
        for marker in item.iter_markers("requires"):
            reason = missing(name, marker.args[0]) if name else None
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
    others = other_shares_of_browser_tests(items, os.environ.get(BROWSER_PART_ENV, "1/1"))
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if item not in others]


def other_shares_of_browser_tests(items: list[pytest.Item], share_text: str) -> list[pytest.Item]:
    """With ``$DYNALOCK_TEST_BROWSER_PART`` K/N (CI's legs), the browser tests outside the Kth of N shares.

    CI runs each browser test once, on one of its two legs (both Django versions' admin pages are read by
    the django tier's tests on both): every Nth of them by name, so a share does not depend on the order.
    """
    share, shares = part(share_text)
    browser = sorted((item for item in items if item.get_closest_marker("browser")), key=lambda item: item.nodeid)
    return [item for index, item in enumerate(browser) if index % shares != share - 1]


@pytest.fixture(autouse=True)
def within_dynamodb_limits(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the test when a request sent during it broke one of DynamoDB's limits (even from a thread
    that swallowed the DynamoDBLimitBreached raised where it was sent)."""
    LIMITS.enforcing = request.node.get_closest_marker("past_dynamodb_limits") is None
    yield
    breaches = LIMITS.take()
    LIMITS.enforcing = True
    if breaches:
        pytest.fail("Requests DynamoDB would refuse:\n" + "\n".join(breaches), pytrace=False)


@pytest.fixture(scope="session")
def stores() -> Iterator[Stores]:
    started = Stores()
    yield started
    started.stop()


@pytest.fixture(scope="session")
def store(request: pytest.FixtureRequest, stores: Stores) -> Store:
    """A DynamoDB-compatible store on 127.0.0.1 (parametrized: moto, dynalite), started once per run."""
    return stores.get(request.param)


@pytest.fixture(scope="session")
def endpoint_url(store: Store) -> str:
    return store.endpoint_url


@pytest.fixture(scope="module")
def table_name(endpoint_url: str) -> Iterator[str]:
    """A module's table, deleted after it: a table of the whole run grows with every test's items, and moto
    copies every table a transaction names, whole, before it writes (late in a run, transactions on the moto
    server took longer than their read time-outs)."""
    name = unique("dynalock-test")
    client = LockClient(make_dynamodb(endpoint_url), name)
    client.create_table()
    yield name
    client.dynamodb.delete_table(TableName=name)
    client.close()


@pytest.fixture
def own_table(endpoint_url: str) -> Iterator[str]:
    """A table for this test alone, deleted after it: for a full scan, which on moto costs as much as
    the table holds (the module's ``table_name`` grows with its module)."""
    name = unique("dynalock-own")
    client = LockClient(make_dynamodb(endpoint_url), name)
    client.create_table()
    yield name
    client.dynamodb.delete_table(TableName=name)
    client.close()


@pytest.fixture
def dynamodb(endpoint_url: str) -> Any:
    return make_dynamodb(endpoint_url)


@pytest.fixture
def make_client(endpoint_url: str, table_name: str) -> Iterator[Callable[..., LockClient]]:
    """Build LockClients with short leases, each with its own boto3 client; closed after the test."""
    clients: list[LockClient] = []

    def build(dynamodb: Any = None, **options: Any) -> LockClient:
        client = short_lease_client(
            dynamodb or make_dynamodb(endpoint_url), options.pop("table", table_name), **options
        )
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close(release=False)


@pytest.fixture
def key() -> str:
    return unique()
