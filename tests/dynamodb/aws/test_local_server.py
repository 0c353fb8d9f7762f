"""LocalDynamoDB says why when its endpoint does not come up, and leaves no process behind."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dynalock_django.dynamodb.aws import local_server
from dynalock_django.dynamodb.aws.local_server import STALLED_CLIENT_SECONDS, LocalDynamoDB

from ...dynamodb_support import make_dynamodb


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


def processes_started(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """The processes the endpoint starts from now on, as they are started."""
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(local_server.subprocess, "Popen", popen)
    return started


def test_an_endpoint_that_never_listens_is_an_error_and_is_stopped(monkeypatch):
    started = processes_started(monkeypatch)
    monkeypatch.setattr(local_server, "STARTUP_TIMEOUT_SECONDS", 0.5)
    endpoint = Endpoint("import time; time.sleep(60)")
    with pytest.raises(RuntimeError, match=rf"did not listen on port {endpoint.port} within 0.5s"):
        endpoint.start()
    [process] = started
    assert process.poll() is not None  # stopped, not left running


def test_an_endpoint_that_listens_but_never_answers_is_not_ready_and_is_stopped(monkeypatch):
    # moto loads its DynamoDB backend at the first request: a caller's short read time-out must not pay it.
    started = processes_started(monkeypatch)
    monkeypatch.setattr(local_server, "STARTUP_TIMEOUT_SECONDS", 3.0)
    endpoint = Endpoint("")
    endpoint.code = (
        "import socket\n"
        f"server = socket.create_server(('127.0.0.1', {endpoint.port}))\n"
        "connections = []\n"
        "while True: connections.append(server.accept())\n"
    )
    with pytest.raises(RuntimeError, match=rf"listened but answered no DynamoDB request on port {endpoint.port}"):
        endpoint.start()
    [process] = started
    assert process.poll() is not None  # stopped, not left running


def test_the_command_runs_without_runpys_found_in_sys_modules_warning():
    """``python -m`` of the endpoint, with every warning an error: no RuntimeWarning, and it says how to call it."""
    command = [sys.executable, "-W", "error", "-m", "dynalock_django.dynamodb.aws.local_server", "--help"]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert "Warning" not in ran.stderr
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("usage: python -m dynalock_django.dynamodb.aws.local_server [-h] [--host HOST]")


def test_the_readme_shows_the_command_the_endpoint_runs_as():
    module = LocalDynamoDB(port=8765).command()[2]
    assert module == "dynalock_django.dynamodb.aws.local_server"
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert f"python -m {module} --port 8765" in readme


def test_a_client_that_connects_and_stops_does_not_hold_the_others_up():
    """One request at a time, yet a paused client (connected, not a byte sent: SIGSTOP between its connect
    and its send) is dropped after a while, and the next client is answered; it waited for good before."""
    with LocalDynamoDB() as endpoint_url:
        port = int(endpoint_url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)):  # the paused client: open, silent
            time.sleep(0.2)  # the server has taken it up and waits for its request
            dynamodb = make_dynamodb(endpoint_url, connect_timeout=5, read_timeout=10 * STALLED_CLIENT_SECONDS)
            started = time.monotonic()
            dynamodb.list_tables(Limit=1)
        assert time.monotonic() - started < 10 * STALLED_CLIENT_SECONDS  # answered, not left for good
