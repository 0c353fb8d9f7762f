"""Admin actions run under the edit locks of all the selected objects, or not at all.

:func:`edit_locked_action` is the public way for an ``EditLockMixin`` admin
to run its own action like "Delete selected" runs: in one transaction, under
the edit locks of every selected object (two requests per 100 objects when
they are free), and only if it gets them all. Otherwise nothing runs, and the
message names each object someone else edits (of those the user may view).
The action receives the locks as a LeaseGroup, to write through the fence::

    @admin.action(description="Merge", permissions=["change"])
    @edit_locked_action
    def merge(self, request, queryset, locks):
        ...
        fenced_save(kept, locks)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.db import models, router, transaction
from django.http import HttpRequest
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from ...dynamodb import LeaseGroup
from ...exceptions import StaleFencingToken
from .claims import Refusal, claim_all

if TYPE_CHECKING:
    from django.contrib import admin

LockedAction = Callable[[Any, HttpRequest, models.QuerySet[Any], LeaseGroup], Any]
Action = Callable[[Any, HttpRequest, models.QuerySet[Any]], Any]

# Set on the functions edit_locked_action returns: they take their own locks, all or none.
TAKES_EDIT_LOCKS = "dynalock_takes_edit_locks"


def edit_locked_action(action: LockedAction) -> Action:
    """``action(modeladmin, request, queryset, locks)`` run only under the edit locks of all selected objects."""
    return all_or_nothing(action, nothing_done=gettext_lazy("Nothing was changed."))


def takes_edit_locks(func: Any) -> bool:
    """The action takes the selected objects' edit locks itself (:func:`edit_locked_action`)."""
    return bool(getattr(func, TAKES_EDIT_LOCKS, False))


def all_or_nothing(action: LockedAction, *, nothing_done: Promise) -> Action:
    @functools.wraps(action)
    def run_under_edit_locks(
        modeladmin: admin.ModelAdmin[Any], request: HttpRequest, queryset: models.QuerySet[Any]
    ) -> Any:
        try:
            with transaction.atomic(using=router.db_for_write(modeladmin.model)):
                claimed = claim_all(list(queryset), request.user)
                if isinstance(claimed, LeaseGroup):
                    return action(modeladmin, request, queryset, claimed)
        except StaleFencingToken as stale:
            # A newer lock's write reached a row first: everything the action did rolled back.
            messages.error(request, f"{nothing_done} {stale}")
            return None
        tell_refusal(modeladmin, request, claimed, nothing_done)
        return None

    setattr(run_under_edit_locks, TAKES_EDIT_LOCKS, True)
    return run_under_edit_locks


def tell_refusal(
    modeladmin: admin.ModelAdmin[Any], request: HttpRequest, refusal: Refusal, nothing_done: Promise
) -> None:
    """Say who edits which object (only those the user may view; the others counted), then ``nothing_done``."""
    if refusal.unavailable is not None:
        messages.error(request, refusal.unavailable)
    hidden = 0
    for obj, reason in refusal.held:
        if modeladmin.has_view_permission(request, obj):
            messages.error(request, _("%(object)s: %(reason)s") % {"object": obj, "reason": reason})
        else:
            hidden += 1
    if hidden:
        messages.error(
            request,
            ngettext(
                "%(count)d other selected object is being edited.",
                "%(count)d other selected objects are being edited.",
                hidden,
            )
            % {"count": hidden},
        )
    messages.error(request, str(nothing_done))
