"""Staff views: the customer list, and an edit page that holds the customer's lock while it saves."""

from __future__ import annotations

import math
from typing import Any, cast

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render

from dynalock_django import fenced_save, lock_object, requires_lock
from dynalock_django.client import get_client
from dynalock_django.dynamodb import LockInfo
from dynalock_django.exceptions import DynamoDBUnavailable, LockTimeout
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from .forms import CustomerForm
from .models import Customer


@staff_member_required
def customer_list(request: HttpRequest) -> HttpResponse:
    return render(request, "desk/customer_list.html", {"customers": Customer.objects.all()})


# How long "Add note" waits for a colleague who holds the customer (the page says so); Save waits not at all.
NOTE_WAIT_SECONDS = 5.0
# Retry-After of a 503 when DynamoDB failed without the circuit breaker saying when to come back.
UNAVAILABLE_RETRY_AFTER = 5


@staff_member_required
def customer_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """GET shows who is editing; POST saves under the customer's lock, through the fence.

    While DynamoDB does not answer, the page is shown read-only with a notice (the admin's "View on
    site" leads here): the customer is read from the database, only who holds it cannot be told.
    """
    customer = get_object_or_404(Customer, pk=pk)
    if request.method == "POST":
        return save_customer(request, pk=pk)
    try:
        holder = _holder(customer)
    except DynamoDBUnavailable as error:
        return _unavailable_page(request, customer, error, status=200)
    return _page(request, customer, holder=holder)


@requires_lock(Customer, purpose="save customer")
def save_customer(request: HttpRequest, pk: int) -> HttpResponse:
    customer = get_object_or_404(Customer, pk=pk)
    form = CustomerForm(request.POST, instance=customer)
    if not form.is_valid():
        return _page(request, customer, form=form, status=400)
    fenced_save(form.instance, request.lock_lease)  # type: ignore[attr-defined]
    messages.success(request, f"Saved {customer}.")
    return redirect("desk:customer-list")


@staff_member_required
def add_note(request: HttpRequest, pk: int) -> HttpResponse:
    """Notes are appended under the customer's lock, waiting a little for it.

    A colleague who keeps the customer longer (the admin's change page holds the lock while open) or a
    DynamoDB that does not answer gets the page back, 423 or 503, with a message and the typed note kept
    in its box: nothing is lost, and no 500.
    """
    customer = get_object_or_404(Customer, pk=pk)
    body = request.POST.get("body", "") if request.method == "POST" else ""
    if not body.strip():
        return redirect("desk:customer-edit", pk=pk)
    try:
        with lock_object(customer, timeout=NOTE_WAIT_SECONDS, purpose="add note", user=request.user):
            customer.notes.create(author=cast(User, request.user), body=body)
    except LockTimeout as refused:
        holder = _data(refused.holder)
        who = holder.holder if holder else "Someone"
        notice = f"{who} is still working on {customer}: your note was not added yet. It is kept below: add it again."
        return _page(request, customer, holder=holder, note=body, notice=notice, status=423)
    except DynamoDBUnavailable as error:
        return _unavailable_page(request, customer, error, status=503, note=body)
    messages.success(request, "Note added.")
    return redirect("desk:customer-edit", pk=pk)


def _holder(customer: Customer) -> LockData | None:
    return _data(get_client().get(key_for_instance(customer)))


def _data(holder: LockInfo | None) -> LockData | None:
    return LockData.from_bytes(holder.data) if holder and not holder.is_released else None


def _page(
    request: HttpRequest,
    customer: Customer,
    *,
    form: CustomerForm | None = None,
    status: int = 200,
    **context: Any,
) -> HttpResponse:
    return render(
        request,
        "desk/customer_edit.html",
        {
            "customer": customer,
            "form": form or CustomerForm(instance=customer),
            "note_wait": NOTE_WAIT_SECONDS,
            **context,
        },
        status=status,
    )


def _unavailable_page(
    request: HttpRequest, customer: Customer, error: DynamoDBUnavailable, *, status: int, note: str = ""
) -> HttpResponse:
    """The page read-only, saying so: the locks' store (DynamoDB) is not answering, and when to try again."""
    retry_after = math.ceil(getattr(error, "retry_after", None) or UNAVAILABLE_RETRY_AFTER)
    notice = (
        f"The lock service is not answering, so nothing can be saved here for now."
        f"{' Your note was not added: it is kept below.' if note else ''}"
        f" Try again in {retry_after} seconds."
    )
    response = _page(request, customer, note=note, notice=notice, read_only=True, status=status)
    if status == 503:
        response["Retry-After"] = str(retry_after)
    return response


async def _snapshot(request: HttpRequest, pk: int) -> JsonResponse:
    customer = await Customer.objects.aget(pk=pk)
    return JsonResponse({"name": customer.name, "token": request.lock_lease.fencing_token})  # type: ignore[attr-defined]


@staff_member_required
@requires_lock(Customer, timeout=30, purpose="snapshot")
async def customer_snapshot(request: HttpRequest, pk: int) -> JsonResponse:
    """The customer as no save is changing it: waits (as a coroutine, under ASGI) for a save in progress."""
    return await _snapshot(request, pk)


@staff_member_required
@requires_lock(Customer, purpose="snapshot")
async def customer_snapshot_now(request: HttpRequest, pk: int) -> JsonResponse:
    """The same, or at once 423 Locked while someone holds the customer's lock."""
    return await _snapshot(request, pk)
