"""Real queues for the task tests: a redis-server of the test's own, and reading what the tasks recorded."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ...dynamodb_support import PATIENCE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A redis-server on a free 127.0.0.1 port, nothing saved to disk, stopped after; its URL."""
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("DYNALOCK_REQUIRE_REDIS") == "1":
            pytest.fail("redis-server is missing and DYNALOCK_REQUIRE_REDIS=1: apt-get install redis-server")
        pytest.skip("redis-server is not installed (apt-get install redis-server): the Celery workers need a broker")
    port = free_port()
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        import redis

        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                redis.Redis(host="127.0.0.1", port=port).ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not answer"
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=PATIENCE)


@pytest.fixture
def redis_url() -> Iterator[str]:
    """The test's own redis-server (see :func:`redis_server`)."""
    with redis_server() as url:
        yield url


@dataclass(frozen=True)
class Run:
    name: str
    started: float
    ended: float
    token: int
    pid: int


def read_runs(path: Path) -> list[Run]:
    if not path.exists():
        return []
    runs = []
    for line in path.read_text().splitlines():
        name, started, ended, token, pid = line.split()
        runs.append(Run(name, float(started), float(ended), int(token), int(pid)))
    return runs


def count_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def overlaps(runs: list[Run]) -> int:
    """How many runs began before the previous run of the same name had ended."""
    by_name: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_name[run.name].append(run)
    found = 0
    for same in by_name.values():
        same.sort(key=lambda run: run.started)
        found += sum(1 for before, after in itertools.pairwise(same) if after.started < before.ended)
    return found


def tokens_increase(runs: list[Run]) -> bool:
    """Per name, in the order the runs started, every token is greater than the one before."""
    by_name: dict[str, list[Run]] = defaultdict(list)
    for run in sorted(runs, key=lambda run: run.started):
        by_name[run.name].append(run)
    return all(all(a.token < b.token for a, b in itertools.pairwise(same)) for same in by_name.values())
