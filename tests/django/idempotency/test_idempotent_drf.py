"""@idempotent() on DRF APIView and ViewSet methods: the Response is finalized and rendered, then kept."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import path
from rest_framework import status, viewsets
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dynalock_django import idempotent

from . import views

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock, pytest.mark.urls(__name__)]


class Transfers(APIView):
    renderer_classes = [JSONRenderer]
    authentication_classes: list[Any] = []

    @idempotent()
    def post(self, request: Request) -> Response:
        run = views.RUNS.ran("transfer")
        return Response({"transfer": run, "amount": request.data.get("amount")}, status=status.HTTP_201_CREATED)


class Refunds(viewsets.ViewSet):
    renderer_classes = [JSONRenderer]
    authentication_classes: list[Any] = []

    @idempotent(required=True)
    def create(self, request: Request) -> Response:
        return Response({"refund": views.RUNS.ran("refund")}, status=status.HTTP_201_CREATED)


urlpatterns = [
    path("transfers/", Transfers.as_view()),
    path("refunds/", Refunds.as_view({"post": "create"})),
]


@pytest.fixture(autouse=True)
def fresh_runs() -> None:
    views.RUNS.__init__()  # type: ignore[misc]


@pytest.fixture(autouse=True)
def patient_leases(dynalock: dict[str, Any]) -> Iterator[None]:
    """Leases no loaded machine's pause runs out: a first request's 1 s lease, granted after it had passed on a
    machine at load 6, was refused and answered 409 "still being processed". What is asserted is run-once."""
    with override_settings(DYNALOCK={**dynalock, "LEASE_DURATION": 60.0, "HEARTBEAT_PERIOD": 20.0}):
        yield


def test_an_apiview_method_runs_once_and_replays_its_rendered_json(client: Client) -> None:
    key = str(uuid.uuid4())
    first = client.post("/transfers/", {"amount": 5}, content_type="application/json", headers={"Idempotency-Key": key})
    again = client.post("/transfers/", {"amount": 5}, content_type="application/json", headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 201
    assert first.json() == {"transfer": 1, "amount": 5}
    assert again.content == first.content
    assert again["Content-Type"] == "application/json"
    assert again["Idempotent-Replayed"] == "true"
    changed = client.post(
        "/transfers/", {"amount": 6}, content_type="application/json", headers={"Idempotency-Key": key}
    )
    assert changed.status_code == 422
    assert views.RUNS.counts["transfer"] == 1


def test_a_viewset_action_with_a_required_key(client: Client) -> None:
    assert client.post("/refunds/").status_code == 400
    key = str(uuid.uuid4())
    assert client.post("/refunds/", headers={"Idempotency-Key": key}).json() == {"refund": 1}
    assert client.post("/refunds/", headers={"Idempotency-Key": key}).json() == {"refund": 1}
    assert views.RUNS.counts["refund"] == 1
