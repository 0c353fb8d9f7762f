"""Deleting under edit locks: nothing is deleted while someone else edits it.

A confirmation page only looks (one read per object); the deletion itself
claims each object's lock (:mod:`.claims`) until its transaction commits or
rolls back. The user's own change page may still hold the lock: its owner
deletes from there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin.options import TO_FIELD_VAR
from django.db import models, router, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.translation import gettext as _

from ...dynamodb import DynamoDBError
from .claims import claim
from .explanations import held_message, unavailable_message
from .object_locks import EditLock
from .object_urls import change_url, object_for

if TYPE_CHECKING:
    from django.contrib import admin


def deletion_refusal(obj: models.Model, user: Any, *, deleting: bool) -> str | None:
    """Why ``obj`` cannot be deleted now, or None; ``deleting`` takes its lock until the transaction ends."""
    if deleting:
        return claim(obj, user)[1]
    edit_lock = EditLock(obj, user)
    try:
        current = edit_lock.read()
    except DynamoDBError as error:
        return unavailable_message(error)
    if edit_lock.is_free(current) or edit_lock.is_mine(current):
        return None
    return held_message(edit_lock.held_by(current))


def delete_under_edit_lock(
    model_admin: admin.ModelAdmin[Any], request: HttpRequest, object_id: str, delete_view: Callable[[], HttpResponse]
) -> HttpResponse:
    """The admin's ``delete_view`` run under the object's edit lock, or back to the change page saying who edits."""
    to_field = request.POST.get(TO_FIELD_VAR, request.GET.get(TO_FIELD_VAR))
    obj = object_for(model_admin, request, object_id, to_field)
    if obj is None or not model_admin.has_delete_permission(request, obj):
        return delete_view()  # the admin's own answer
    with transaction.atomic(using=router.db_for_write(model_admin.model)):
        refusal = deletion_refusal(obj, request.user, deleting=request.method == "POST")
        if refusal is not None:
            messages.error(request, _("%(reason)s Nothing was deleted.") % {"reason": refusal})
            return HttpResponseRedirect(change_url(model_admin, obj))
        return delete_view()


def deleting_under_edit_locks(delete_selected: Callable[..., Any]) -> Callable[..., Any]:
    """The "Delete selected" action, refused while any selected object is edited by someone else."""

    @functools.wraps(delete_selected)
    def delete_selected_under_edit_locks(
        modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: models.QuerySet[Any]
    ) -> Any:
        with transaction.atomic(using=router.db_for_write(modeladmin.model)):
            deleting = bool(request.POST.get("post"))
            refusals = [
                (obj, refusal)
                for obj in queryset
                if (refusal := deletion_refusal(obj, request.user, deleting=deleting)) is not None
            ]
            if not refusals:
                return delete_selected(modeladmin, request, queryset)
        for obj, refusal in refusals:
            messages.error(request, _("%(object)s: %(reason)s") % {"object": obj, "reason": refusal})
        messages.error(request, _("Nothing was deleted."))
        return None

    return delete_selected_under_edit_locks
