"""The processes of test_idempotency_processes: each a Django process of its own, on the test's shared table."""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path
from typing import Any


def setup(dynalock: dict[str, Any]) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ["DYNALOCK_TEST_SETTINGS"] = json.dumps(dynalock)
    import django

    django.setup()


def send_duplicates(dynalock: dict[str, Any], keys: list[str], seed: int, folder: str) -> None:
    """Send every key's request, in an order of its own; each run appends its key to ``executions`` (O_APPEND)."""
    setup(dynalock)
    from django.http import HttpResponse, JsonResponse
    from django.test import RequestFactory

    from dynalock_django import idempotent

    executions = Path(folder, "executions")

    @idempotent()
    def charge(request: Any) -> HttpResponse:
        key = request.headers["Idempotency-Key"]
        with executions.open("a") as side_effects:  # one short write each: appended whole
            side_effects.write(f"{key}\n")
        time.sleep(0.01)  # in flight long enough for other processes' duplicates to meet it
        return JsonResponse({"key": key, "pid": os.getpid(), "at": time.time()}, status=201)

    factory = random.Random(seed)
    order = [key for key in keys for _ in range(3)]
    factory.shuffle(order)
    requests = RequestFactory()
    answers = []
    for key in order:
        request = requests.post("/charge/", b"{}", content_type="application/json", headers={"Idempotency-Key": key})
        response = charge(request)
        body = hashlib.sha256(response.content).hexdigest()
        answers.append([key, response.status_code, body, response.has_header("Idempotent-Replayed")])
    Path(folder, f"answers-{seed}.json").write_text(json.dumps(answers))


def hold_forever(dynalock: dict[str, Any], key: str, folder: str) -> None:
    """A first run that never ends: it says it started, then waits to be killed (SIGKILL: no release)."""
    setup(dynalock)
    from dynalock_django import idempotency

    with idempotency(key, fingerprint="f"):
        Path(folder, "started").write_text(str(os.getpid()))
        time.sleep(3600)
