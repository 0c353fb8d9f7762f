"""The change page under its object's edit lock: opening it, checking a save, and what its template and script get.

Anyone but the tab holding the lock — another user, or the same user in
another tab — gets the read-only view, under a banner saying who is editing
since when, which tells them by itself when the lock frees. A save is refused
(a form error, nothing written) unless the submitting tab still holds the lock,
or DynamoDB does not answer, ``EDIT_DURING_OUTAGE`` is on and the row's fence
lets it through (:mod:`.outage_saves`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models
from django.forms import ModelForm
from django.http import HttpRequest
from django.template.loader import select_template
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from ...conf import MAX_PAGE_SECONDS, dynalock_settings
from ...dynamodb import DynamoDBError, DynamoDBUnavailable, LockLost
from ...fencing import fencing_field, has_fencing_token
from ...models import FORCE_RELEASE_PERMISSION
from ..staff_messages import paused_message, staff_message
from .edit_queue import MAX_POLL_SECONDS
from .explanations import held_message, lost_message, outage_message, unavailable_message
from .idle_resume import opened_stamp
from .object_locks import EditLock, EditState
from .object_urls import endpoint_url
from .outage_saves import FENCE_FIELD, page_fence, refused_outage_save
from .request_state import EditPage, RequestEditLocks
from .tickets import HANDOFF_COOKIE, HANDOFF_SECONDS, TICKET_FIELD, EditTicket, handed_over

if TYPE_CHECKING:
    from django.contrib import admin

TEMPLATE = "admin/dynalock_django/edit_lock/change_form.html"
REFUSED = "edit_lock_not_held"  # the form error's code: a save from a tab that does not hold the edit lock

logger = logging.getLogger("dynalock_django.admin")


def open_page(model_admin: admin.ModelAdmin[Any], request: HttpRequest, obj: models.Model) -> EditPage:
    """Decide, before the page renders, whether it holds the lock (editable) or shows who does."""
    edit_lock = EditLock(obj, request.user)
    may_edit = model_admin.has_change_permission(request, obj)
    try:
        if may_edit:
            state = edit_lock.open(handed_over(request))
        else:  # a view-only user takes no lock, but is told who is editing
            current = edit_lock.read()
            state = edit_lock.held_by(None if edit_lock.is_free(current) else current)
    except DynamoDBUnavailable as error:  # CircuitOpen too: then at once, without a request
        if may_edit and dynalock_settings.EDIT_DURING_OUTAGE:
            paused_message(error)  # the failure, logged
            state = EditState(edit_lock.key, unlocked=True)
        else:  # read-only, saying so in staff words
            state = EditState(edit_lock.key, problem=unavailable_message(error))
    except DynamoDBError as error:
        state = EditState(edit_lock.key, problem=unavailable_message(error))
    return EditPage(state, may_edit)


def checked_before_save(
    form: type[ModelForm[Any]], request: HttpRequest, obj: models.Model, locks: RequestEditLocks
) -> type[ModelForm[Any]]:
    """``form``, whose validation renews the submitting tab's lock, or refuses the save with a form error.

    What it decided is the request's page (``locks.page``), refused or not: the
    page shown again says why, and a save goes ahead under the renewed lease.
    """
    edit_lock = EditLock(obj, request.user)

    def clean(form_instance: ModelForm[Any]) -> dict[str, Any] | None:
        cleaned = super(checked, form_instance).clean()
        page = _renewed_for_save(request, edit_lock)
        if page.state.unlocked and not form_instance.errors:  # no lock to check: the row's fence, if it has one
            problem = refused_outage_save(request, form_instance.instance, page.state.ticket)
            page = EditPage(replace(page.state, problem=problem), page.may_edit, page.lease)
        problem = page.state.problem
        if problem is not None:
            # The banner says it, once; the form error only stops the save (see show_edit_lock).
            refused = _("Nothing was saved. %(problem)s") % {"problem": problem}
            locks.page = EditPage(replace(page.state, problem=refused), page.may_edit, page.lease)
            raise ValidationError(refused, code=REFUSED)
        locks.page = page
        return cleaned

    checked: type[ModelForm[Any]] = type(form.__name__, (form,), {"clean": clean, "__module__": form.__module__})
    return checked


def _renewed_for_save(request: HttpRequest, edit_lock: EditLock) -> EditPage:
    ticket = EditTicket.parse(request.POST.get(TICKET_FIELD))
    lease, problem = None, None
    try:
        if ticket is None:
            if dynalock_settings.EDIT_DURING_OUTAGE:  # a page opened during an outage: is it still on?
                edit_lock.read()
            problem = _("This page does not hold the edit lock.")
        else:
            lease = edit_lock.renew(ticket)
    except LockLost as lost:
        problem = lost_message(edit_lock, lost.current)
    except DynamoDBUnavailable as error:
        if dynalock_settings.EDIT_DURING_OUTAGE:
            paused_message(error)  # the failure, logged
            return EditPage(EditState(edit_lock.key, ticket=ticket, unlocked=True), may_edit=True)
        problem = unavailable_message(error)
    except DynamoDBError as error:
        problem = f"{_('Your edit lock could not be checked.')} {staff_message(error)}"
    return EditPage(EditState(edit_lock.key, ticket=ticket, problem=problem), may_edit=True, lease=lease)


def save_without_lock(request: HttpRequest, obj: models.Model) -> None:
    """A save made without its edit lock (EDIT_DURING_OUTAGE), logged.

    The form's validation has already claimed the row through its fence (:mod:`.outage_saves`): it is
    row-locked until this save's transaction ends. The save leaves the row's fencing token as it is, so a
    write under a newer lease keeps refusing older leases' writes.
    """
    logger.warning(
        "%s %r saved by %r without its edit lock: DynamoDB was not answering (EDIT_DURING_OUTAGE is on).",
        obj._meta.label,
        obj.pk,
        request.user.get_username(),
    )
    if not has_fencing_token(type(obj)):
        obj.save()
        return
    fence = fencing_field(type(obj))
    obj.save(
        update_fields=[
            field.name for field in obj._meta.concrete_fields if not field.primary_key and field is not fence
        ]
    )


def show_edit_lock(response: TemplateResponse, page: EditPage, context: dict[str, Any]) -> None:
    """Turn the admin's change page into the edit-lock page: its banner, the tab's ticket and the script.

    ``context``: what the banner and the script read (:func:`page_context`).
    """
    assert response.context_data is not None
    # Extend the template the admin would have used, so a project's own change_form still applies.
    names = response.template_name
    if isinstance(names, str):
        names = [names]
    response.context_data["dynalock_parent_template"] = select_template(names) if isinstance(names, Sequence) else names
    response.context_data["dynalock"] = context
    state = page.state
    if state.problem or _held_by_another(state) or state.next_in_line is not None:
        response.context_data["show_delete"] = False  # the delete page would refuse: see deletion
    response.template_name = TEMPLATE
    if _refused_only(response.context_data):
        # Nothing for the user to correct: no "Please correct the error below.", no second copy of the banner.
        response.context_data["errors"] = []


def _refused_only(context: dict[str, Any]) -> bool:
    """The page's one error is the refused save of a tab without the edit lock."""
    admin_form, errors = context.get("adminform"), context.get("errors")
    if admin_form is None or not errors or len(errors) != 1:
        return False
    form_errors = admin_form.form.errors.as_data()
    return list(form_errors) == [NON_FIELD_ERRORS] and all(
        error.code == REFUSED for error in form_errors[NON_FIELD_ERRORS]
    )


def page_context(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    obj: models.Model,
    page: EditPage,
    *,
    poll_seconds: float,
    check_seconds: float,
) -> dict[str, Any]:
    """The edit-lock page's state for its banner and script: mode, message, fence, endpoints and timings."""

    def url(action: str) -> str:
        return endpoint_url(model_admin, action, obj)

    state, may_edit = page.state, page.may_edit
    mode = _mode(state)
    if state.problem:
        message = state.problem
    elif state.unlocked:
        message = outage_message()
    elif mode == "edit":
        message = _("You are editing this. Others see it read-only until you save or leave this page.")
    elif state.holder is not None or state.next_in_line is not None:
        message = held_message(state)
    else:
        message = ""
    lease = dynalock_settings.EDIT_LEASE_DURATION
    return {
        "state": state,
        "mode": mode,
        "message": message,
        "fence_field": FENCE_FIELD,
        "fence": _fence(request, obj, state) if may_edit else None,
        "take_over_url": url("take_over"),
        "may_take_over": bool(
            mode == "view"
            and state.holder is not None
            and may_edit
            and (state.holder_is_me or request.user.has_perm(FORCE_RELEASE_PERMISSION))
        ),
        "config": {
            "mode": mode,
            "ticket": str(state.ticket) if state.ticket else None,
            "holder": state.holder_name if state.holder else None,
            "mayEdit": may_edit,
            # Someone else has the lock, or it is kept for them: this user may get in line.
            "mayAsk": may_edit and mode == "view" and (state.next_in_line is not None or _held_by_another(state)),
            "leaseSeconds": lease,
            "renewSeconds": lease / 3,
            # A visible editing page looks between renewals (one read each), so that news reaches it within seconds.
            "checkSeconds": min(_page_seconds(check_seconds, lease / 3), lease / 3),
            "pollSeconds": _page_seconds(poll_seconds, MAX_POLL_SECONDS),
            "checkUrl": url("check"),
            "renewUrl": url("renew"),
            "releaseUrl": url("release"),
            "resumeUrl": url("resume"),
            "idleSeconds": dynalock_settings.EDIT_IDLE_TIMEOUT,
            "opened": opened_stamp(),
            "statusUrl": url("status"),
            "askUrl": url("ask"),
            "waitUrl": url("wait"),
            "leaveUrl": url("leave"),
            "handoffCookie": HANDOFF_COOKIE,
            "handoffSeconds": HANDOFF_SECONDS,
            "strings": {
                "free": _("%(holder)s finished editing."),
                "freeNobody": _("Nobody is editing this now."),
                "reload": _("Reload to edit"),
                "unreachable": _("The server cannot be reached: your edit lock may run out."),
                "editing": _("You are editing this. Others see it read-only until you save or leave this page."),
                "idle": _(
                    "You were away, so this page let its edit lock go: others may edit now. "
                    "Your unsaved changes are still here."
                ),
                "continue": _("Continue editing"),
                "deleted": _("This object was deleted meanwhile."),
                "reloadLosing": _("Reload (your unsaved changes will be lost)"),
                "ask": _("Ask to edit"),
                "stopWaiting": _("Stop waiting"),
                "stoppedWaiting": _("You are not waiting to edit this any more."),
                "titleLost": _("Cannot save"),
                "titleTurn": _("Your turn to edit"),
                "notifyTurn": _("It is your turn to edit %(object)s.") % {"object": str(obj)},
            },
        },
    }


def _fence(request: HttpRequest, obj: models.Model, state: EditState) -> str | None:
    """The page's signed fence for a save during an outage: as first shown, so a page shown again after a
    refused save still refuses until it is reopened (and the user sees what was saved meanwhile)."""
    if request.method == "POST":
        return request.POST.get(FENCE_FIELD)
    return page_fence(obj, request.user, state.ticket)


def _page_seconds(seconds: Any, otherwise: float) -> float:
    """A ModelAdmin's period as the page's timers can take it: JSON has no Infinity or NaN (W004 warns of them)."""
    if not isinstance(seconds, int | float) or not 0 < seconds < math.inf:
        return otherwise
    return min(float(seconds), MAX_PAGE_SECONDS)


def _held_by_another(state: EditState) -> bool:
    return state.holder is not None and not state.holder_is_me


def _mode(state: EditState) -> str:
    """What the page's script does: renew the page's lock (edit), say it was lost, wait for it (view), or nothing."""
    if state.unlocked:
        return "outage"  # editable, with no lock to renew or wait for
    if state.ticket is None:
        return "view"
    return "lost" if state.problem else "edit"
