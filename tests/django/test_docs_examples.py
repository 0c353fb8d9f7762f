"""Every Python block of the documentation site runs, with every warning an error, or says why not.

A block runs unless the line before it is a marker (an HTML comment, invisible on the site):

- ``<!-- example: skip (REASON) -->``: it cannot run standalone (a settings fragment, a model of the
  reader's app); the reason is listed.
- ``<!-- example: run by tests/PATH -->``: another test runs it as written (the path must exist).

A block runs in a namespace of givens, the names the docs use without defining them: ``Customer``
(the test project's model), ``customer`` and ``duplicate`` (two of its rows), ``request`` (a request of a
signed-in user), ``client`` (a ``LockClient``), ``key``, ``user_id`` and ``tab``, all on the in-process
store (``locks_in_memory()``: ``get_client()`` is ``client``), on a virtual clock; ``boto3.client`` reaches
that store too, never AWS. A block with a top-level
``await`` runs as a coroutine. README.md's blocks run in tests/test_readme.py,
tests/dynamodb/test_readme_example.py and tests/installed; the tutorial includes two of them.
Each block is a test of its own (``page:line``); those that do not run here are skipped with their
marker's reason, so ``pytest -ra`` lists them.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from django.contrib.auth.models import User
from django.test import RequestFactory

from dynalock_django.dynamodb import InMemoryDynamoDB, LockClient
from dynalock_django.testing import locks_in_memory
from testproject.desk.models import Customer

from ..docs_site import DOCS, ROOT, nav_pages

BLOCK = re.compile(r"^(?P<indent> *)```python\n(?P<code>.*?)^(?P=indent)```$", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- example: (?P<how>skip|run by)\s*(?P<why>.*?) -->$")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    code: str
    how: str  # "run", "skip", "run by"
    why: str

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in nav_pages():
        text = (DOCS / page).read_text()
        for block in BLOCK.finditer(text):
            before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            marker = MARKER.match(before)
            how, why = (marker["how"], marker["why"].strip("()")) if marker else ("run", "")
            code = "\n".join(line.removeprefix(block["indent"]) for line in block["code"].splitlines())
            found.append(Example(page, text[: block.start()].count("\n") + 1, code, how, why))
    return found


EXAMPLES = examples()


@pytest.fixture
def boto3_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """``boto3.client("dynamodb", ...)`` as the docs call it, answered by the in-process store instead of AWS."""
    real_client = boto3.client
    credentials = {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "docs", "AWS_SECRET_ACCESS_KEY": "docs"}
    for name, value in credentials.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)

    def in_process(*args: Any, **kwargs: Any) -> Any:
        dynamodb = real_client(*args, **kwargs)
        # botocore's own hook: a before-send handler's answer is the request's.
        dynamodb.meta.events.register_first(
            "before-send.dynamodb", lambda request, **_: InMemoryDynamoDB().send(request)
        )
        return dynamodb

    monkeypatch.setattr(boto3, "client", in_process)


@pytest.fixture
def givens(db: None, boto3_in_process: None) -> Iterator[dict[str, Any]]:
    """The names the docs use without defining them; afterwards, the clients and tables an example made are gone."""
    with locks_in_memory(SHARED_LOCK_MODELS=["desk.Customer"]) as memory:  # as locking.md tells to declare
        request = RequestFactory().get("/")
        request.user = User.objects.create_user("alice")
        tables_before = set(memory.client.dynamodb.list_tables()["TableNames"])
        namespace: dict[str, Any] = {
            "__name__": "docs_example",
            "Customer": Customer,
            "customer": Customer.objects.create(name="Acme", plan="free"),
            "duplicate": Customer.objects.create(name="ACME Ltd.", plan="pro"),
            "request": request,
            "client": memory.client,
            "key": "doc-example",
            "user_id": request.user.pk,
            "tab": "tab-1",
        }
        yield namespace
        for value in namespace.values():
            if isinstance(value, LockClient) and value is not memory.client:
                value.close()
        # moto keeps one backend a process: the tables an example created go with it
        for table in set(memory.client.dynamodb.list_tables()["TableNames"]) - tables_before:
            memory.client.dynamodb.delete_table(TableName=table)


def run(example: Example, namespace: dict[str, Any]) -> None:
    code = compile(example.code, example.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as a reader running it with python -W error
        result = eval(code, namespace)  # the docs' own code, as written
        if inspect.iscoroutine(result):  # a block with a top-level await
            asyncio.run(result)


def test_every_marker_says_why():
    assert len(EXAMPLES) >= 25  # the pages were read
    for example in EXAMPLES:
        if example.how == "skip":
            assert example.why, f"{example.name}: a skipped example says why"
        if example.how == "run by":
            assert (ROOT / example.why).is_file(), f"{example.name}: {example.why} does not exist"


def parameters() -> list[Any]:
    """Each block, those that do not run here marked skipped with their marker's reason (``-ra`` lists them)."""
    return [
        pytest.param(
            example,
            id=example.name,
            marks=[pytest.mark.skip(reason=f"{example.name}: {example.how} {example.why}".replace(": skip ", ": "))]
            if example.how in {"skip", "run by"}
            else [],
        )
        for example in EXAMPLES
    ]


@pytest.mark.parametrize("example", parameters())
def test_the_example_runs_clean(example, givens):
    run(example, givens)
