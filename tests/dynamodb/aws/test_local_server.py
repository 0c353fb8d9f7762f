"""LocalDynamoDB says why when its endpoint does not come up, and leaves no process behind."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dynalock_django.dynamodb.aws import local_server
from dynalock_django.dynamodb.aws.local_server import LocalDynamoDB


class Endpoint(LocalDynamoDB):
    """An endpoint whose process runs ``code`` instead of a server."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code

    def command(self) -> list[str]:
        return [sys.executable, "-c", self.code]


def test_an_endpoint_that_exits_at_once_is_an_error_with_the_install_hint():
    hint = re.escape(LocalDynamoDB.install_hint)
    with pytest.raises(RuntimeError, match=rf"exited with code 3; {hint}"):
        Endpoint("raise SystemExit(3)").start()


def test_an_endpoint_that_never_listens_is_an_error_and_is_stopped(monkeypatch):
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(local_server.subprocess, "Popen", popen)
    monkeypatch.setattr(local_server, "STARTUP_TIMEOUT_SECONDS", 0.5)
    endpoint = Endpoint("import time; time.sleep(60)")
    with pytest.raises(RuntimeError, match=rf"did not listen on port {endpoint.port} within 0.5s"):
        endpoint.start()
    [process] = started
    assert process.poll() is not None  # stopped, not left running
