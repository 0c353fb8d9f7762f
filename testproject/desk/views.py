"""Staff views: the customer list, and an edit page that holds the customer's lock while it saves."""

from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render

from dynalock_django import fenced_save, lock_object, requires_lock
from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData

from .forms import CustomerForm
from .models import Customer


@staff_member_required
def customer_list(request: HttpRequest) -> HttpResponse:
    return render(request, "desk/customer_list.html", {"customers": Customer.objects.all()})


@staff_member_required
def customer_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """GET shows who is editing; POST saves under the customer's lock, through the fence."""
    customer = get_object_or_404(Customer, pk=pk)
    if request.method == "POST":
        return save_customer(request, pk=pk)
    holder = get_client().get(key_for_instance(customer))
    data = LockData.from_bytes(holder.data) if holder and not holder.is_released else None
    return render(
        request,
        "desk/customer_edit.html",
        {"customer": customer, "form": CustomerForm(instance=customer), "holder": data},
    )


@requires_lock(Customer, purpose="save customer")
def save_customer(request: HttpRequest, pk: int) -> HttpResponse:
    customer = get_object_or_404(Customer, pk=pk)
    form = CustomerForm(request.POST, instance=customer)
    if not form.is_valid():
        return render(request, "desk/customer_edit.html", {"customer": customer, "form": form}, status=400)
    fenced_save(form.instance, request.lock_lease)  # type: ignore[attr-defined]
    messages.success(request, f"Saved {customer}.")
    return redirect("desk:customer-list")


@staff_member_required
def add_note(request: HttpRequest, pk: int) -> HttpResponse:
    """Notes are appended under the customer's lock, waiting a little for it."""
    customer = get_object_or_404(Customer, pk=pk)
    if request.method == "POST" and request.POST.get("body"):
        with lock_object(customer, timeout=5, purpose="add note", user=request.user):
            customer.notes.create(author=cast(User, request.user), body=request.POST["body"])
        messages.success(request, "Note added.")
    return redirect("desk:customer-edit", pk=pk)


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
