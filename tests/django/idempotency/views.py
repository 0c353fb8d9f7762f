"""Views the idempotency tests call: each counts its runs, so a test can tell a run from a replay."""

from __future__ import annotations

import collections
import random
import threading
from typing import Any

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils.decorators import method_decorator
from django.views import View

from dynalock_django import idempotent


class Runs:
    """How many times each view body ran, by a name the test gives (the side effect a retry must not repeat)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self.hold = threading.Event()  # set: views that wait for it run on
        self.hold.set()
        self.entered = threading.Event()

    def ran(self, name: str) -> int:
        with self._lock:
            self.counts[name] += 1
            return self.counts[name]


RUNS = Runs()
NOISE = random.Random(0).randbytes(400 * 1024)  # zlib cannot shrink it under the limit


@idempotent()
def pay(request: Any) -> HttpResponse:
    """A payment: 201 with a new id per run, a cookie of its own and a hop-by-hop header."""
    run = RUNS.ran(request.body.decode() or "pay")
    RUNS.entered.set()
    RUNS.hold.wait(30)
    response = JsonResponse({"payment": run, "body": request.body.decode()}, status=201)
    response["Location"] = f"/payments/{run}"
    response["Connection"] = "close"
    response.set_cookie("seen", str(run))
    return response


@idempotent(required=True, header="X-Request-Key", ttl=60, methods=("POST",))
def strict(request: Any) -> HttpResponse:
    return HttpResponse(f"strict {RUNS.ran('strict')}")


@idempotent()
def fails(request: Any) -> HttpResponse:
    return HttpResponse(f"failed {RUNS.ran('fails')}", status=503)


@idempotent()
def streams(request: Any) -> StreamingHttpResponse:
    return StreamingHttpResponse(iter([f"stream {RUNS.ran('streams')}".encode()]))


@idempotent()
def large(request: Any) -> HttpResponse:
    return HttpResponse(NOISE + str(RUNS.ran("large")).encode())


@idempotent()
async def pay_async(request: Any) -> HttpResponse:
    return HttpResponse(f"async {RUNS.ran('async')}", status=201)


@method_decorator(idempotent(), name="post")
class OrderView(View):
    def post(self, request: Any) -> HttpResponse:
        return HttpResponse(f"order {RUNS.ran('order')}", status=201)

    def put(self, request: Any) -> HttpResponse:
        return HttpResponse(f"put {RUNS.ran('put')}")
