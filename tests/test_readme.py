"""The README's Installation section says what the code does (its commands run in tests/installed)."""

from __future__ import annotations

import ast
from pathlib import Path

import boto3

from . import readme

PROTOCOL = Path(__file__).resolve().parent.parent / "dynalock_django" / "dynamodb"
TABLE_MANAGEMENT = PROTOCOL / "aws" / "table_management.py"  # createtable, describe, check --deploy
# IAM has no action of its own for a transaction: each of its writes needs its UpdateItem or DeleteItem.
NO_IAM_ACTION = {"TransactWriteItems"}


def operations_sent(path: Path) -> set[str]:
    """The DynamoDB operations a module calls the boto3 client for (only the protocol package talks to it)."""
    api = boto3.session.Session().client("dynamodb", region_name="us-east-1").meta.method_to_api_mapping
    calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]
    return {api[call.func.attr] for call in calls if isinstance(call.func, ast.Attribute) and call.func.attr in api}


def test_the_iam_policy_allows_exactly_the_operations_the_package_sends():
    locks, management = readme.iam_policy()["Statement"]
    running = set().union(*(operations_sent(path) for path in PROTOCOL.rglob("*.py") if path != TABLE_MANAGEMENT))
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
