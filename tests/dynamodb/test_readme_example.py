"""The README's "protocol client in ten lines", pasted as written, runs with every warning an error.

Its ``boto3.client("dynamodb", ...)`` is a real boto3 client with the README's own botocore
Config (what ``RetryBudgetWarning`` judges); only its region, credentials and endpoint are this
run's: the in-process store answers it, or the run's local endpoint does.
"""

from __future__ import annotations

import warnings
from typing import Any

import boto3
import pytest

from dynalock_django.dynamodb import InMemoryDynamoDB

from .. import readme
from ..dynamodb_support import MEMORY_URL


@pytest.fixture
def boto3_of_this_run(monkeypatch: pytest.MonkeyPatch, endpoint_url: str) -> None:
    """``boto3.client`` as the README calls it, reaching this run's store instead of AWS."""
    real_client = boto3.client
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "readme")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "readme")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    if endpoint_url != MEMORY_URL:
        monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint_url)
        return
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)

    def in_process(*args: Any, **kwargs: Any) -> Any:
        dynamodb = real_client(*args, **kwargs)
        # botocore's own hook: a before-send handler's answer is the request's (the store keeps one backend a process).
        dynamodb.meta.events.register_first(
            "before-send.dynamodb", lambda request, **_: InMemoryDynamoDB().send(request)
        )
        return dynamodb

    monkeypatch.setattr(boto3, "client", in_process)


def test_the_protocol_client_in_ten_lines_runs_clean_as_written(boto3_of_this_run):
    billed: list[int] = []
    namespace: dict[str, Any] = {"run_billing": lambda fencing_token: billed.append(fencing_token)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # as a reader running it with python -W error
            exec(compile(readme.protocol_example(), "README.md", "exec"), namespace)  # the README's code, as written
        assert len(billed) == 1
        client = namespace["client"]
        assert client.get("nightly-billing").is_released
        assert client.get("report-42").is_released  # taken at once, then released
    finally:
        client = namespace.get("client")
        if client is not None:
            client.dynamodb.delete_table(TableName="locks")
            client.close()
