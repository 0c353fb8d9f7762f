"""Deleting under edit locks: nothing is deleted while someone else edits it.

A confirmation page only looks (one read per object); the deletion itself
claims the objects' locks (:mod:`.claims`) until its transaction commits or
rolls back: "Delete selected" all of them at once, or deletes nothing. The
user's own change page may still hold a lock: its owner deletes from there.
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
from django.utils.translation import gettext_lazy

from ...dynamodb import DynamoDBError
from . import edit_queue
from .claims import Refusal, claim
from .edit_queue import kept_for_message
from .explanations import held_message, unavailable_message
from .locked_actions import all_or_nothing, tell_refusal
from .object_locks import EditLock
from .object_urls import change_url, object_for

if TYPE_CHECKING:
    from django.contrib import admin


def deletion_refusal(obj: models.Model, user: Any) -> str | None:
    """Why ``obj`` cannot be deleted now, or None (one read: its lock is taken only to delete it)."""
    edit_lock = EditLock(obj, user)
    try:
        current = edit_lock.read()
    except DynamoDBError as error:
        return unavailable_message(error)
    if edit_lock.is_mine(current):
        return None
    if edit_lock.is_free(current):
        # Free, but kept for whoever asked to edit first, as the deletion itself would find it (claims).
        first = edit_queue.next_in_line(current.waiters if current is not None else (), user)
        return None if first is None else kept_for_message(first.name)
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
        refusal = claim(obj, request.user)[1] if request.method == "POST" else deletion_refusal(obj, request.user)
        if refusal is not None:
            messages.error(request, _("%(reason)s Nothing was deleted.") % {"reason": refusal})
            return HttpResponseRedirect(change_url(model_admin, obj))
        return delete_view()


def deleting_under_edit_locks(delete_selected: Callable[..., Any]) -> Callable[..., Any]:
    """The "Delete selected" action: it deletes all the selected objects under their edit locks, or none.

    The confirmation page reads each lock to warn early; the deletion takes
    them all at once (:func:`.locked_actions.all_or_nothing`).
    """
    delete_all = all_or_nothing(
        lambda modeladmin, request, queryset, locks: delete_selected(modeladmin, request, queryset),
        nothing_done=gettext_lazy("Nothing was deleted."),
    )

    @functools.wraps(delete_selected)
    def delete_selected_under_edit_locks(
        modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: models.QuerySet[Any]
    ) -> Any:
        if request.POST.get("post"):
            return delete_all(modeladmin, request, queryset)
        held = [(obj, refusal) for obj in queryset if (refusal := deletion_refusal(obj, request.user)) is not None]
        if not held:
            return delete_selected(modeladmin, request, queryset)
        tell_refusal(modeladmin, request, Refusal(held), gettext_lazy("Nothing was deleted."))
        return None

    return delete_selected_under_edit_locks
