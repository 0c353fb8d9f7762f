"""The DynamoDB-compatible stores the endpoint tests run against, and what each can do.

moto and dynalite are independent implementations: a protocol that works on
both is less likely to lean on one server's quirks. dynalite is stricter in
its validation, atomic per key, and lacks some of DynamoDB's API; a test that
needs such a part says so with ``@pytest.mark.requires("ttl")`` and is skipped,
with the reason, on a store without it.
``$DYNALOCK_TEST_ENDPOINT_URL`` replaces both with that endpoint, taken to be
DynamoDB itself (every capability).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dynalock_django.dynamodb.aws.local_server import LocalDynamoDB

from .dynamodb_support import ENDPOINT_ENV, make_dynamodb

# What DynamoDB has that a store may lack, and what missing it means.
CAPABILITIES = {
    "ttl": "no TTL API (UpdateTimeToLive answers UnknownOperationException)",
    "transactions": "no transactions (TransactWriteItems answers UnknownOperationException)",
    "old_item_on_refusal": "ignores ReturnValuesOnConditionCheckFailure (a refused write returns no item)",
    "add_index": "no way to add an index to an existing table (UpdateTable refuses or ignores it)",
    "binary_size": "a 400 KB limit that counts binary values as their base64 text (a third larger)",
}

# What each store lacks (DynamoDB itself lacks nothing the tests use).
LACKS = {
    "dynalite": frozenset({"ttl", "transactions", "old_item_on_refusal", "add_index"}),
    "moto": frozenset({"binary_size"}),
}

DYNALITE = Path(__file__).resolve().parent.parent / "node_modules" / ".bin" / "dynalite"


@dataclass(frozen=True)
class Store:
    name: str
    endpoint_url: str
    capabilities: frozenset[str]

    def supports(self, capability: str) -> bool:
        return capability in self.capabilities

    @property
    def refused_update_costs(self) -> dict[str, int]:
        """The requests of a conditional UpdateItem refused here: a read more where the store returns no item."""
        return {"UpdateItem": 1} if self.supports("old_item_on_refusal") else {"UpdateItem": 1, "GetItem": 1}


def store_names() -> list[str]:
    """The stores of this run: moto and dynalite, or the one endpoint named in the environment."""
    return ["endpoint"] if os.environ.get(ENDPOINT_ENV) else ["moto", "dynalite"]


def missing(name: str, capability: str) -> str | None:
    """Why store ``name`` cannot run a test that needs ``capability`` (None: it can)."""
    if capability not in CAPABILITIES:
        raise ValueError(f"Unknown capability {capability!r}: one of {', '.join(CAPABILITIES)}.")
    return f"{name} has {CAPABILITIES[capability]}" if capability not in _capabilities(name) else None


def _capabilities(name: str) -> frozenset[str]:
    return frozenset(CAPABILITIES) - LACKS.get(name, frozenset())


class Dynalite(LocalDynamoDB):
    """dynalite (npm; ``npm ci`` installs it), in memory, on 127.0.0.1."""

    install_hint = "is node installed, and dynalite (npm ci)?"

    def command(self) -> list[str]:
        if not DYNALITE.exists() or shutil.which("node") is None:
            raise RuntimeError(f"dynalite is not installed at {DYNALITE}: run `npm ci` (make test does).")
        # A table stays CREATING for a moment, as in DynamoDB, so creation's wait is exercised.
        return [str(DYNALITE), "--host", "127.0.0.1", "--port", str(self.port), "--createTableMs", "100"]


@contextlib.contextmanager
def _unmeasured() -> Iterator[None]:
    """Processes started in this block are not followed by coverage (make test measures the ones the tests start)."""
    config = os.environ.pop("COVERAGE_PROCESS_CONFIG", None)
    try:
        yield
    finally:
        if config is not None:
            os.environ["COVERAGE_PROCESS_CONFIG"] = config


def shared_endpoint_url() -> str:
    """The run's moto endpoint (dynalock_django.testing's, shared by the protocol and the Django-layer tests).

    Started without coverage: it runs moto's code, not ours, and serves every request of the run,
    which tracing would slow down.
    """
    from dynalock_django.testing import local_endpoint_url  # after pytest_plugins has loaded it

    with _unmeasured():
        return _warmed_up(local_endpoint_url())  # or $DYNALOCK_TEST_ENDPOINT_URL


@functools.cache
def _warmed_up(endpoint_url: str) -> str:
    """After one request with patient time-outs: a new server's first answer is slow (moto loads its
    DynamoDB backend, about half a second), and the suite's clients wait half a second, once. Without
    this, the run's first test to create a table, whichever the order made it, could time out."""
    with contextlib.closing(make_dynamodb(endpoint_url, connect_timeout=5, read_timeout=30)) as dynamodb:
        dynamodb.list_tables(Limit=1)
    return endpoint_url


class Stores:
    """Starts each store on first use and stops the ones it started."""

    def __init__(self) -> None:
        self._started: dict[str, Store] = {}
        self._servers: list[LocalDynamoDB] = []

    def get(self, name: str) -> Store:
        if name not in self._started:
            self._started[name] = Store(name, self._start(name), _capabilities(name))
        return self._started[name]

    def _start(self, name: str) -> str:
        if name == "dynalite":  # node, not Python: nothing for coverage to follow
            server = Dynalite()
            self._servers.append(server)
            return _warmed_up(server.start())
        return shared_endpoint_url()

    def stop(self) -> None:
        for server in self._servers:
            server.stop()
