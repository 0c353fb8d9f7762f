"""Many concurrent duplicates per key, from threads of one server: each key's view runs exactly once.

200 keys, each sent 8 times (``DYNALOCK_IDEMPOTENCY_DUPLICATES=50`` for the issue's 200 x 50: about
a minute and a half, too long for every CI run), the duplicates of a few keys at a time mixed, so
that eight threads often send the same key at once.

Every answer is the run's 201, a 409 (its first request in flight) or a byte-identical replay. On the
in-process store and the virtual clock: no lease can run out under a loaded machine, so the property
is the protocol's, not the machine's speed.
"""

from __future__ import annotations

import collections
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.http import HttpResponse, JsonResponse
from django.test import RequestFactory

from dynalock_django import idempotent
from dynalock_django.testing import locks_in_memory

pytestmark = pytest.mark.django_db

KEYS = 200
DUPLICATES = int(os.environ.get("DYNALOCK_IDEMPOTENCY_DUPLICATES", "8"))
MIXED = 4  # keys whose duplicates are sent mixed together
THREADS = 8


def test_200_keys_times_many_concurrent_duplicates_run_200_times() -> None:
    executions: collections.Counter[str] = collections.Counter()
    counting = threading.Lock()

    @idempotent()
    def charge(request: Any) -> HttpResponse:
        with counting:  # the side effect a retry must not repeat
            executions[request.headers["Idempotency-Key"]] += 1
            run = sum(executions.values())
        return JsonResponse({"charge": run, "key": request.headers["Idempotency-Key"]}, status=201)

    factory = RequestFactory()

    def send(key: str) -> tuple[str, int, bytes, bool]:
        request = factory.post("/charge/", b"{}", content_type="application/json", headers={"Idempotency-Key": key})
        response = charge(request)
        return key, response.status_code, response.content, response.has_header("Idempotent-Replayed")

    shuffle = random.Random(43).shuffle
    requests: list[str] = []
    for first in range(0, KEYS, MIXED):
        window = [f"key-{index}" for index in range(first, first + MIXED) for _ in range(DUPLICATES)]
        shuffle(window)
        requests += window
    with locks_in_memory(), ThreadPoolExecutor(THREADS) as pool:
        answers = list(pool.map(send, requests))

    assert len(executions) == KEYS
    assert set(executions.values()) == {1}  # exactly 200 executions
    runs = {key: body for key, status, body, replayed in answers if status == 201 and not replayed}
    assert len(runs) == KEYS
    kinds: collections.Counter[str] = collections.Counter()
    for key, status, body, replayed in answers:
        if replayed:
            assert (status, body) == (201, runs[key])  # byte for byte
            kinds["replay"] += 1
        elif status == 409:
            kinds["409"] += 1
        else:
            assert status == 201
            kinds["run"] += 1
    assert kinds["run"] == KEYS
    assert sum(kinds.values()) == KEYS * DUPLICATES
    assert kinds["409"] > 0  # the duplicates did meet their first request in flight
