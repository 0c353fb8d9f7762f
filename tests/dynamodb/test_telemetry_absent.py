"""Without opentelemetry-api installed, nothing imports it and the acquire path is the code as written.

A child process hides the package with a meta-path finder (as if it were not
installed), then acquires and releases a lock on the test's store.
"""

from __future__ import annotations

import textwrap

import pytest

from ..dynamodb_support import json_of_child, unique

pytestmark = pytest.mark.processes

CHILD = textwrap.dedent(
    """
    import json, sys

    class NoOpenTelemetry:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, NoOpenTelemetry())
    from tests.dynamodb_support import make_dynamodb, short_lease_client
    from dynalock_django.dynamodb import telemetry
    from dynalock_django.dynamodb.acquiring.acquirer import Acquirer
    from dynalock_django.dynamodb.aws.store import LockStore

    endpoint_url, table_name, key = sys.argv[1:]
    client = short_lease_client(make_dynamodb(endpoint_url), table_name)
    client.acquire(key, timeout=5).release()
    assert client.try_acquire(key) is not None
    client.close()
    print(json.dumps({
        "enabled": telemetry.ENABLED,
        "imported": sorted(name for name in sys.modules if name.startswith("opentelemetry")),
        "wrapped": [hasattr(method, "__wrapped__") for method in (Acquirer.acquire, LockStore.update)],
    }))
    """
)


def test_without_the_api_nothing_imports_it_and_nothing_is_wrapped(endpoint_url, table_name):
    assert json_of_child(CHILD, endpoint_url, table_name, unique()) == {
        "enabled": False,
        "imported": [],
        "wrapped": [False, False],
    }


def test_with_the_api_the_same_methods_are_wrapped():
    """The check above can fail: where the API is installed (this suite), they are."""
    from dynalock_django.dynamodb import telemetry
    from dynalock_django.dynamodb.acquiring.acquirer import Acquirer
    from dynalock_django.dynamodb.aws.store import LockStore

    assert telemetry.ENABLED
    assert hasattr(Acquirer.acquire, "__wrapped__")
    assert hasattr(LockStore.update, "__wrapped__")
