"""The README's Installation section says what the code does (its commands run in tests/installed)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynalock_django import StaleFencingToken
from dynalock_django.dynamodb.aws.connection import new_session
from dynalock_django.testing import lock_table

from . import readme
from .dynamodb_support import SHORT_LEASE_SETTINGS
from .stores import shared_endpoint_url

PROTOCOL = Path(__file__).resolve().parent.parent / "dynalock_django" / "dynamodb"
TABLE_MANAGEMENT = PROTOCOL / "aws" / "table_management.py"  # createtable, describe, check --deploy
# The tests' and the demo's endpoint on 127.0.0.1 (it asks itself whether it answers yet): never AWS.
LOCAL_ENDPOINT = PROTOCOL / "aws" / "local_server"
# IAM has no action of its own for a transaction: each of its writes needs its UpdateItem or DeleteItem.
NO_IAM_ACTION = {"TransactWriteItems"}


@functools.cache
def api_of_methods() -> dict[str, str]:
    """boto3's DynamoDB method names to their operations (one client: a new session each time cost 0.3 s)."""
    return dict(new_session().client("dynamodb", region_name="us-east-1").meta.method_to_api_mapping)


def operations_sent(path: Path) -> set[str]:
    """The DynamoDB operations a module calls the boto3 client for (only the protocol package talks to it)."""
    api = api_of_methods()
    calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]
    return {api[call.func.attr] for call in calls if isinstance(call.func, ast.Attribute) and call.func.attr in api}


def test_the_iam_policy_allows_exactly_the_operations_the_package_sends():
    locks, management = readme.iam_policy()["Statement"]
    sources = [
        path for path in PROTOCOL.rglob("*.py") if path != TABLE_MANAGEMENT and LOCAL_ENDPOINT not in path.parents
    ]
    running = set().union(*(operations_sent(path) for path in sources))
    assert running >= NO_IAM_ACTION
    running -= NO_IAM_ACTION
    assert {action.removeprefix("dynamodb:") for action in locks["Action"]} == running
    assert {action.removeprefix("dynamodb:") for action in management["Action"]} == operations_sent(TABLE_MANAGEMENT)
    assert "UpdateItem" in running  # the scan of the code finds calls at all


def test_every_python_block_of_the_installation_is_valid_python():
    blocks = readme.python_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        ast.parse(block)


def test_the_models_of_the_installation_name_their_rows():
    """Without ``__str__`` the admin, the live-locks page and the 423 page say "Customer object (1)"."""
    tree = ast.parse(readme.python_block("models.py"))
    models = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    assert models
    for model in models:
        assert "__str__" in {node.name for node in model.body if isinstance(node, ast.FunctionDef)}, model.name


def test_the_two_commands_stay_two_commands_and_a_few_lines():
    """A newcomer reads how to start; what the suite checks and what CI runs is in tests/README.md."""
    (block,) = readme.section_blocks("Two commands")
    assert [line.split()[:2] for line in block.text.splitlines()] == [["make", "demo"], ["make", "test"]]
    section = readme.README.read_text().split("\n## Two commands\n", 1)[1].split("\n## ", 1)[0]
    prose = [line for line in section.split("```")[-1].splitlines() if line.strip()]
    assert len(prose) <= 6, "the CI detail belongs in tests/README.md"


# ---------------------------------------------------------------- the lock_object example: the safe pattern

EXAMPLE = "services.py"


def example_function() -> ast.FunctionDef:
    (function,) = [node for node in ast.parse(readme.python_block(EXAMPLE)).body if isinstance(node, ast.FunctionDef)]
    return function


def called(node: ast.AST) -> list[str]:
    """The names of the functions and methods called in ``node``, in the order they appear."""
    calls = sorted((n for n in ast.walk(node) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    names = []
    for call in calls:
        func = call.func
        names.append(func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "?")
    return names


def test_the_lock_object_example_locks_then_reads_then_saves_fenced():
    function = example_function()
    [locked] = [node for node in function.body if isinstance(node, ast.With)]
    before = function.body[: function.body.index(locked)]
    assert not any(
        name in {"get", "filter", "first", "refresh_from_db", "fenced_refresh"} for n in before for name in called(n)
    )
    assert called(locked.items[0].context_expr)[0] == "lock_object"
    inside = [name for statement in locked.body for name in called(statement)]
    assert inside[0] == "fenced_refresh"  # the first thing under the lock: claim the row, then read it
    assert inside[-1] == "fenced_save"
    assert "save" not in inside  # no plain save()


@pytest.fixture
def example_table() -> Iterator[None]:
    shared_endpoint_url()
    with lock_table(**SHORT_LEASE_SETTINGS):
        yield


@pytest.mark.django_db
def test_the_lock_object_example_runs_and_is_refused_once_a_newer_lock_wrote_the_row(example_table):
    from testproject.desk.models import Customer

    source = readme.python_block(EXAMPLE).replace("from .models import Customer\n", "")
    namespace: dict[str, Any] = {"Customer": Customer}
    exec(compile(source, "README.md", "exec"), namespace)  # the README's own code, as written

    rename_customer = namespace["rename_customer"]
    customer = Customer.objects.create(name="Acme")
    rename_customer(customer.pk, "Acme Corp.")
    customer.refresh_from_db()
    assert customer.name == "Acme Corp."
    written_under = customer.fencing_token
    assert written_under is not None
    # A lock whose holder paused past its lease comes back after a newer holder wrote the row: refused.
    Customer.objects.filter(pk=customer.pk).update(name="Newer", fencing_token=written_under + 10**9)
    with pytest.raises(StaleFencingToken):
        rename_customer(customer.pk, "Stale")
    customer.refresh_from_db()
    assert customer.name == "Newer"
