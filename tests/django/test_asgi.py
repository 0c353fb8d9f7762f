"""The test project under uvicorn: an async view with ``@requires_lock`` waits as a coroutine, not a thread."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dynalock_django.keys import key_for_model
from testproject.desk.models import Customer

from ..dynamodb_support import PATIENCE
from .processes import ROOT, manage_py_environment, wait_for

pytestmark = [pytest.mark.processes, pytest.mark.uses_dynalock, pytest.mark.slow]

# More than a thread pool would run at once (asgiref runs a sync view on one thread by default, and Python's
# default pool has at most 32 threads): each waits its turn in a chain of hand-offs, so more only take longer.
REQUESTS = 50

# A customer, and a staff user's session: the snapshot views are for staff.
SETUP = """
from django.contrib.auth.models import User
from django.test import Client
from testproject.desk.models import Customer
customer = Customer.objects.create(name="Acme", plan="pro")
browser = Client()
browser.force_login(User.objects.create_user("desk", is_staff=True))
print(customer.pk, browser.cookies["sessionid"].value)
"""


@pytest.fixture
def served(dynalock: dict[str, Any], tmp_path: Path) -> Iterator[tuple[str, int, str]]:
    """The test project under uvicorn on a socket of ours: its URL, the customer's pk, a staff session."""
    env = manage_py_environment(dynalock, "testproject.settings", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v0", "-c", SETUP], cwd=ROOT, env=env, check=True, capture_output=True
    )
    pk, session = made.stdout.decode().split()
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(REQUESTS * 2)
        port = listening.getsockname()[1]
        command = [sys.executable, "-m", "uvicorn", "testproject.asgi:application", "--fd", str(listening.fileno())]
        server = subprocess.Popen(
            [*command, "--log-level", "warning"], cwd=ROOT, env=env, pass_fds=[listening.fileno()]
        )
    try:
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/admin/login/"), 6 * PATIENCE)
        yield f"http://127.0.0.1:{port}", int(pk), session
    finally:
        server.terminate()
        server.wait(timeout=PATIENCE)


def answers(url: str) -> bool:
    """Whether the server answers ``url`` with a page: its first request (Django's start, under coverage on a
    loaded machine) may take longer than httpx's 5 s, and one that times out is asked again."""
    try:
        return httpx.get(url, timeout=2 * PATIENCE).status_code == 200
    except httpx.TransportError:
        return False


def test_fifty_requests_for_one_locked_customer_wait_as_coroutines(served, other_holder):
    url, pk, session = served
    lease = other_holder.acquire(key_for_model(Customer, pk))  # another process is saving the customer

    async def main() -> None:
        limits = httpx.Limits(max_connections=REQUESTS * 2 + 10)
        async with httpx.AsyncClient(base_url=url, cookies={"sessionid": session}, timeout=60, limits=limits) as http:
            await http.get("/")  # warm: the server's first request builds its lock client
            waiting = [asyncio.create_task(http.get(f"/customers/{pk}/snapshot/")) for _ in range(REQUESTS)]
            refused = await asyncio.gather(*(http.get(f"/customers/{pk}/snapshot/now/") for _ in range(REQUESTS)))
            # Answered while every waiting request still waits (the lock is held until the end): the
            # refusals did not queue behind them. Had they, they would wait past the client's time-out.
            assert not any(task.done() for task in waiting), "refusals queued behind the waiting requests"
            assert {response.status_code for response in refused} == {423}
            assert all(response.headers["Retry-After"] for response in refused)

            await asyncio.sleep(0.5)  # every waiting request is in its view by now
            assert not any(task.done() for task in waiting)
            listed = await http.get("/")  # another view, while every request waits for the lock
            assert listed.status_code == 200
            assert not any(task.done() for task in waiting), "the server answered only once the waits ended"

            await asyncio.to_thread(lease.release)
            answered = await asyncio.gather(*waiting)
        assert {response.status_code for response in answered} == {200}
        tokens = [response.json()["token"] for response in answered]
        assert len(set(tokens)) == REQUESTS  # each request held the lock on its own, under its own token
        assert min(tokens) > lease.fencing_token

    asyncio.run(main())
