"""``EditLockMixin``: staff edits serialized in the admin itself.

Opening an object's change page takes its edit lock for that browser tab
(:mod:`dynalock_django.edit_locks`). Anyone else — another user, or the same
user in another tab — gets the read-only view, inlines included, under a
banner saying who is editing since when, which tells them by itself when the
lock frees. The tab renews its lock through the endpoints below every third of
``EDIT_LEASE_DURATION`` and releases it when the page goes away; a save is
refused (a form error, nothing written) unless the submitting tab still holds
the lock, and the row is written through the fencing check when its model has
a ``FencingTokenField``. Add pages take no lock.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.options import TO_FIELD_VAR
from django.contrib.admin.utils import quote, unquote
from django.core.checks import CheckMessage, Warning
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models, router, transaction
from django.forms import ModelForm
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.loader import select_template
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import dateformat, timezone
from django.utils.encoding import escape_uri_path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..conf import dynalock_settings
from ..dynamodb import DynamoDBError, Lease, LockInfo, LockLost, LockNotAcquired
from ..edit_locks import EditLock, EditState, EditTicket
from ..exceptions import StaleFencingToken
from ..fencing import fenced_refresh, fenced_save, has_fencing_token
from ..keys import key_for_instance
from ..transactions import release_when_transaction_ends
from .bulk_edits import changelist_form_under_edit_locks, modifies, under_edit_locks
from .errors import staff_message, unavailable_response
from .live_locks import FORCE_RELEASE_PERMISSION

if TYPE_CHECKING:  # django-stubs makes ModelAdmin generic; Django's class is not subscriptable
    _ModelAdmin = admin.ModelAdmin[Any]
else:
    _ModelAdmin = admin.ModelAdmin

TICKET_FIELD = "_dynalock_ticket"
# The ticket of a page that is being replaced by the next page of its tab (a reload, a
# save-and-continue), set just before it goes: the next page takes the lock over from it.
HANDOFF_COOKIE = "dynalock_handoff"
HANDOFF_SECONDS = 30
TEMPLATE = "admin/dynalock_django/edit_lock/change_form.html"

_PAGE = "_dynalock_edit_page"  # the request's _EditPage
_CLAIMED = "_dynalock_claimed"  # the request's changelist writes: {key: Lease} of the objects it claimed


@dataclass
class _EditPage:
    """What one request decided about its object's edit lock."""

    state: EditState
    may_edit: bool  # the user's change permission, whatever the lock says
    lease: Lease | None = None  # a save's: renewed just before it, used to fence the write


class EditLockMixin(_ModelAdmin):
    """Put first in the bases: ``class CustomerAdmin(EditLockMixin, admin.ModelAdmin)``."""

    # How often a read-only page asks whether the lock has freed.
    edit_lock_poll_seconds = 3.0

    # ------------------------------------------------------------- the change page

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if request.method == "GET":
            self._open_edit_lock(request, object_id)
        try:
            response = super().change_view(request, object_id, form_url, extra_context)
        except StaleFencingToken as stale:
            # A newer lock's write reached the row first; the admin's transaction rolled back.
            messages.error(request, _("Nothing was saved: %(error)s") % {"error": stale})
            return HttpResponseRedirect(request.get_full_path())
        if HANDOFF_COOKIE in request.COOKIES and HANDOFF_COOKIE not in response.cookies:
            response.delete_cookie(HANDOFF_COOKIE, path=escape_uri_path(request.path))
        return response

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        page: _EditPage | None = getattr(request, _PAGE, None)
        # Only a page shown (GET) turns read-only. A POST is judged by its ticket when its form
        # validates: a refusal is a form error, and the user's input stays on the page.
        if not allowed or obj is None or page is None or page.state.ticket is not None or request.method != "GET":
            return allowed
        return page.state.key != key_for_instance(obj)

    def get_form(
        self, request: HttpRequest, obj: models.Model | None = None, change: bool = False, **kwargs: Any
    ) -> type[ModelForm[Any]]:
        form = super().get_form(request, obj, change, **kwargs)
        if request.method != "POST" or not change or obj is None:
            return form
        edit_lock = EditLock(obj, request.user)
        check = self._check_before_save

        def clean(form_instance: ModelForm[Any]) -> dict[str, Any] | None:
            cleaned = super(checked, form_instance).clean()
            check(request, edit_lock)
            return cleaned

        checked: type[ModelForm[Any]] = type(form.__name__, (form,), {"clean": clean, "__module__": form.__module__})
        return checked

    def save_model(self, request: HttpRequest, obj: models.Model, form: Any, change: bool) -> None:
        page: _EditPage | None = getattr(request, _PAGE, None)
        lease = page.lease if page is not None else getattr(request, _CLAIMED, {}).get(key_for_instance(obj))
        if lease is not None and has_fencing_token(type(obj)):
            fenced_save(obj, lease)
        else:
            super().save_model(request, obj, form, change)

    def response_change(self, request: HttpRequest, obj: models.Model) -> HttpResponse:
        response = super().response_change(request, obj)
        page: _EditPage | None = getattr(request, _PAGE, None)
        if page is None or page.lease is None or page.state.ticket is None:
            return response
        if "_continue" in request.POST:
            # The tab's next page takes the lock over; the page sets this too, but it may lack JavaScript.
            _set_handoff(response, page.state.ticket, escape_uri_path(request.path), secure=request.is_secure())
        else:
            release_when_transaction_ends(page.lease, router.db_for_write(type(obj)))
        return response

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: models.Model | None = None,
    ) -> HttpResponse:
        response = super().render_change_form(request, context, add, change, form_url, obj)
        page: _EditPage | None = getattr(request, _PAGE, None)
        if add or obj is None or page is None or not isinstance(response, TemplateResponse):
            return response
        assert response.context_data is not None
        # Extend the template the admin would have used, so a project's own change_form still applies.
        names = response.template_name
        if isinstance(names, str):
            names = [names]
        response.context_data["dynalock_parent_template"] = (
            select_template(names) if isinstance(names, Sequence) else names
        )
        response.context_data["dynalock"] = self._page_context(request, obj, page)
        state = page.state
        if state.problem or (state.holder is not None and not state.holder_is_me):
            response.context_data["show_delete"] = False  # the delete page would refuse: see delete_view
        response.template_name = TEMPLATE
        return response

    # ------------------------------------------------------------- the delete page

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Deletes under the object's edit lock: nothing is deleted while someone else edits it."""
        to_field = request.POST.get(TO_FIELD_VAR, request.GET.get(TO_FIELD_VAR))
        obj = self._object_for(request, object_id, to_field)
        if obj is None or not self.has_delete_permission(request, obj):
            return super().delete_view(request, object_id, extra_context)  # the admin's own answer
        with transaction.atomic(using=router.db_for_write(self.model)):
            refusal = self._lock_for_deletion(request, obj, deleting=request.method == "POST")
            if refusal is not None:
                messages.error(request, _("%(reason)s Nothing was deleted.") % {"reason": refusal})
                return HttpResponseRedirect(self._change_url(obj))
            return super().delete_view(request, object_id, extra_context)

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        """The admin's actions, each one that modifies run under the edit locks of the selected objects.

        "Delete selected" deletes nothing while any of them is edited by
        someone else; other actions run on the objects nobody else edits.
        """
        # Django 6.1 passes action_location (and warns about overrides without it); 5.2 has no such argument.
        get_actions: Callable[..., dict[str, Any]] = super().get_actions
        actions = get_actions(request) if action_location is None else get_actions(request, action_location)
        for name, action in actions.items():
            if name == "delete_selected" and action is not None:
                actions[name] = _replace_func(action, _deleting_under_edit_locks)
            elif action is not None and modifies(action):
                actions[name] = _replace_func(action, under_edit_locks)
        return actions

    # ------------------------------------------------------------- the changelist

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method == "POST" and "_save" in request.POST:
            # The list_editable rows take their edit locks as their forms are cleaned, held until this ends.
            with transaction.atomic(using=router.db_for_write(self.model)):
                return super().changelist_view(request, extra_context)
        return super().changelist_view(request, extra_context)

    def get_changelist_form(self, request: HttpRequest, **kwargs: Any) -> type[ModelForm[Any]]:
        form = super().get_changelist_form(request, **kwargs)
        return changelist_form_under_edit_locks(form, lambda obj: self.claim_edit_lock(request, obj) is not None)

    def claim_edit_lock(self, request: HttpRequest, obj: models.Model) -> Lease | None:
        """Take ``obj``'s edit lock for a write made without its change page, until the transaction ends.

        For a changelist edit or an action: None, with a message naming who
        edits it, when someone else does. The row is stamped with the lock's
        fencing token, so a writer with an older lock can no longer write it.
        """
        lease, refusal = self._claim(request, obj)
        if lease is not None and has_fencing_token(type(obj)):
            try:
                fenced_refresh(obj, lease)
            except StaleFencingToken as stale:
                lease, refusal = None, str(stale)
        if refusal is not None:
            messages.error(request, _("%(object)s was not changed: %(reason)s") % {"object": obj, "reason": refusal})
        return lease

    def _claim(self, request: HttpRequest, obj: models.Model) -> tuple[Lease | None, str | None]:
        """``obj``'s edit lock, held until the current transaction ends; or why it cannot be had."""
        edit_lock = EditLock(obj, request.user)
        try:
            state = edit_lock.claim()
        except DynamoDBError as error:
            return None, _unavailable_message(error)
        if state.ticket is None:
            return None, _held_message(state)
        lease = edit_lock.lease(state.ticket)
        release_when_transaction_ends(lease, router.db_for_write(type(obj)))
        claimed: dict[str, Lease] = getattr(request, _CLAIMED, {})
        setattr(request, _CLAIMED, {**claimed, edit_lock.key: lease})
        return lease, None

    def _lock_for_deletion(self, request: HttpRequest, obj: models.Model, *, deleting: bool) -> str | None:
        """Why ``obj`` cannot be deleted now, or None.

        The confirmation page only looks (one read); the deletion itself takes
        the lock until its transaction (the caller's) commits or rolls back.
        """
        if deleting:
            return self._claim(request, obj)[1]
        edit_lock = EditLock(obj, request.user)
        try:
            current = edit_lock.read()
        except DynamoDBError as error:
            return _unavailable_message(error)
        if edit_lock.is_free(current) or edit_lock.is_mine(current):
            return None
        return _held_message(edit_lock.held_by(current))

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        messages_ = super().check(**kwargs)
        if not has_fencing_token(self.model):
            messages_.append(
                Warning(
                    f"{type(self).__name__} uses EditLockMixin, but {self.model._meta.label} has no "
                    "FencingTokenField: a save made just as its tab's lock was lost is not refused by the database.",
                    hint="Add `fencing_token = FencingTokenField()` (dynalock_django.fencing) and run makemigrations.",
                    obj=self,
                    id="dynalock.W003",
                )
            )
        return messages_

    # ------------------------------------------------------------- the endpoints

    def get_urls(self) -> list[URLPattern]:
        endpoints: list[tuple[str, Callable[..., HttpResponse]]] = [
            ("renew", require_POST(self.edit_lock_renew_view)),
            ("release", require_POST(self.edit_lock_release_view)),
            ("status", require_GET(self.edit_lock_status_view)),
            ("take_over", require_http_methods(["GET", "HEAD", "POST"])(self.edit_lock_take_over_view)),
        ]
        return [
            path(
                f"<path:object_id>/edit-lock/{action.replace('_', '-')}/",
                self.admin_site.admin_view(view),
                name=self._url_name(action),
            )
            for action, view in endpoints
        ] + super().get_urls()

    def edit_lock_renew_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``ticket``: the tab renews its lock (the page calls this every third of the lease)."""
        return self._with_ticket(request, object_id, lambda edit_lock, ticket: edit_lock.renew(ticket), "held")

    def edit_lock_release_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``ticket``: the tab lets its lock go (sent by the page as it unloads)."""
        return self._with_ticket(request, object_id, lambda edit_lock, ticket: edit_lock.release(ticket), "released")

    def edit_lock_status_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: who holds the lock, for a read-only page waiting for it to free."""
        obj, edit_lock = self._edit_lock_for(request, object_id)
        if not self.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        try:
            current = edit_lock.read()
        except DynamoDBError as error:
            return JsonResponse({"state": "unavailable", "message": staff_message(error)}, status=503)
        if edit_lock.is_free(current):
            return JsonResponse({"state": "free"})
        state = edit_lock.held_by(current)
        return JsonResponse({"state": "held", "holder": state.holder_name, "message": _held_message(state)})

    def edit_lock_take_over_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: confirm taking over the holding shown; POST ``fencing_token`` (that holding): take it.

        Taking over one's own lock (another tab) needs only the change
        permission; someone else's needs the force-release permission too.
        """
        obj, edit_lock = self._edit_lock_for(request, object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        try:
            return self._take_over(request, obj, edit_lock)
        except DynamoDBError as error:
            return unavailable_response(request, {**self.admin_site.each_context(request), "opts": self.opts}, error)

    def _take_over(self, request: HttpRequest, obj: models.Model, edit_lock: EditLock) -> HttpResponse:
        change_url = self._change_url(obj)
        current = edit_lock.read()
        seen = request.POST.get("fencing_token") if request.method == "POST" else None
        if current is None or edit_lock.is_free(current):
            return HttpResponseRedirect(change_url)  # nobody to take it from: the page takes it
        if not edit_lock.is_mine(current) and not request.user.has_perm(FORCE_RELEASE_PERMISSION):
            raise PermissionDenied
        holder = edit_lock.held_by(current)
        if request.method != "POST":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "object": obj,
                "holder": holder,
                "title": _("Take over editing"),
                "change_url": change_url,
            }
            return TemplateResponse(request, "admin/dynalock_django/edit_lock/take_over_confirmation.html", context)
        if seen != str(current.fencing_token):
            messages.warning(request, _("The edit lock changed hands meanwhile; nothing was taken over."))
            return HttpResponseRedirect(change_url)
        try:
            state = edit_lock.take_over(current)
        except LockNotAcquired:
            messages.warning(request, _("The edit lock changed hands meanwhile; nothing was taken over."))
            return HttpResponseRedirect(change_url)
        if not holder.holder_is_me:
            self.log_change(
                request, obj, _("Took over the edit lock held by %(holder)s.") % {"holder": holder.holder_name}
            )
        response = HttpResponseRedirect(change_url)
        assert state.ticket is not None
        _set_handoff(response, state.ticket, change_url, secure=request.is_secure())
        return response

    # ------------------------------------------------------------- helpers

    def _open_edit_lock(self, request: HttpRequest, object_id: str) -> None:
        """Decide, before the page renders, whether it holds the lock (editable) or shows who does."""
        obj = self._object_for(request, object_id, request.GET.get(TO_FIELD_VAR))
        if obj is None:
            return  # the change view answers: not found, or a to_field it refuses
        edit_lock = EditLock(obj, request.user)
        may_edit = self.has_change_permission(request, obj)
        try:
            if may_edit:
                state = edit_lock.open(EditTicket.parse(request.COOKIES.get(HANDOFF_COOKIE)))
            else:  # a view-only user takes no lock, but is told who is editing
                current = edit_lock.read()
                state = edit_lock.held_by(None if edit_lock.is_free(current) else current)
        except DynamoDBError as error:
            state = EditState(edit_lock.key, problem=_unavailable_message(error))
        setattr(request, _PAGE, _EditPage(state, may_edit))

    def _check_before_save(self, request: HttpRequest, edit_lock: EditLock) -> None:
        """Renew the submitting tab's lock, or refuse the save with a form error."""
        ticket = EditTicket.parse(request.POST.get(TICKET_FIELD))
        lease, problem = None, None
        if ticket is None:
            problem = _("This page does not hold the edit lock.")
        else:
            try:
                lease = edit_lock.renew(ticket)
            except LockLost as lost:
                problem = _lost_message(edit_lock, lost.current)
            except DynamoDBError as error:
                problem = _("The edit lock could not be checked (%(error)s).") % {"error": staff_message(error)}
        state = EditState(edit_lock.key, ticket=ticket, problem=problem)
        setattr(request, _PAGE, _EditPage(state, may_edit=True, lease=lease))
        if problem is not None:
            raise ValidationError(_("%(problem)s Nothing was saved.") % {"problem": problem}, code="edit_lock_not_held")

    def _with_ticket(
        self, request: HttpRequest, object_id: str, action: Callable[[EditLock, EditTicket], object], done: str
    ) -> HttpResponse:
        obj, edit_lock = self._edit_lock_for(request, object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        ticket = EditTicket.parse(request.POST.get("ticket"))
        if ticket is None:
            return JsonResponse({"state": "invalid", "message": _("No valid ticket was sent.")}, status=400)
        try:
            action(edit_lock, ticket)
        except LockLost as lost:
            return JsonResponse({"state": "lost", "message": _lost_message(edit_lock, lost.current)}, status=409)
        except DynamoDBError as error:
            return JsonResponse({"state": "unavailable", "message": staff_message(error)}, status=503)
        return JsonResponse({"state": done})

    def _object_for(self, request: HttpRequest, object_id: str, to_field: str | None) -> models.Model | None:
        if to_field and not self.to_field_allowed(request, to_field):
            return None
        return self.get_object(request, unquote(object_id), to_field)

    def _change_url(self, obj: models.Model) -> str:
        name = f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_change"
        return reverse(name, args=[quote(obj.pk)])

    def _edit_lock_for(self, request: HttpRequest, object_id: str) -> tuple[models.Model, EditLock]:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(_("No such object."))
        return obj, EditLock(obj, request.user)

    def _url_name(self, action: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_edit_lock_{action}"

    def _page_context(self, request: HttpRequest, obj: models.Model, page: _EditPage) -> dict[str, Any]:
        def url(action: str) -> str:
            return reverse(f"{self.admin_site.name}:{self._url_name(action)}", args=[quote(obj.pk)])

        state, may_edit = page.state, page.may_edit
        mode = _mode(state)
        if state.problem:
            message = state.problem
        elif mode == "edit":
            message = _("You are editing this. Others see it read-only until you save or leave this page.")
        elif state.holder is not None:
            message = _held_message(state)
        else:
            message = ""
        lease = dynalock_settings.EDIT_LEASE_DURATION
        return {
            "state": state,
            "mode": mode,
            "message": message,
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
                "leaseSeconds": lease,
                "renewSeconds": lease / 3,
                "pollSeconds": self.edit_lock_poll_seconds,
                "renewUrl": url("renew"),
                "releaseUrl": url("release"),
                "statusUrl": url("status"),
                "handoffCookie": HANDOFF_COOKIE,
                "handoffSeconds": HANDOFF_SECONDS,
                "strings": {
                    "free": _("%(holder)s finished editing."),
                    "freeNobody": _("Nobody is editing this now."),
                    "reload": _("Reload to edit"),
                    "unreachable": _("The server cannot be reached: your edit lock may run out."),
                    "editing": _("You are editing this. Others see it read-only until you save or leave this page."),
                },
            },
        }


def _mode(state: EditState) -> str:
    """What the page's script does: renew the page's lock (edit), say it was lost, or wait for it (view)."""
    if state.ticket is None:
        return "view"
    return "lost" if state.problem else "edit"


def _set_handoff(response: HttpResponse, ticket: EditTicket, page_path: str, *, secure: bool) -> None:
    response.set_cookie(
        HANDOFF_COOKIE,
        str(ticket),
        max_age=HANDOFF_SECONDS,
        path=page_path,
        secure=secure,
        httponly=True,
        samesite="Strict",
    )


def _since(holder: LockInfo) -> str:
    """The holder's start, on its own wall clock (display only), in the current time zone."""
    if holder.acquired_at is None:
        return "?"
    return dateformat.format(timezone.localtime(holder.acquired_at), "H:i")


def _held_message(state: EditState) -> str:
    assert state.holder is not None
    if state.holder_is_me:
        message = _("You are editing this in another tab (since %(since)s).") % {"since": _since(state.holder)}
    else:
        message = _("Being edited by %(holder)s since %(since)s.") % {
            "holder": state.holder_name,
            "since": _since(state.holder),
        }
    if state.frees_at is None:
        return message
    frees_at = dateformat.format(timezone.localtime(state.frees_at), "H:i:s")
    return f"{message} {_('If that tab was closed, the lock frees at %(time)s.') % {'time': frees_at}}"


def _replace_func(action: Any, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Any:
    """An entry of ``get_actions()`` whose function is wrapped: a tuple before Django 6.1, an Action since."""
    if isinstance(action, tuple):
        func, *rest = action
        return (wrap(func), *rest)
    return dataclasses.replace(action, func=wrap(action.func))


def _deleting_under_edit_locks(delete_selected: Callable[..., Any]) -> Callable[..., Any]:
    """The "Delete selected" action, refused while any selected object is edited by someone else.

    Its confirmation page looks (one read per object); the deletion takes
    every object's lock (one write each) until its transaction ends.
    """

    @functools.wraps(delete_selected)
    def delete_selected_under_edit_locks(
        modeladmin: EditLockMixin, request: HttpRequest, queryset: models.QuerySet[Any]
    ) -> Any:
        with transaction.atomic(using=router.db_for_write(modeladmin.model)):
            deleting = bool(request.POST.get("post"))
            refusals = [
                (obj, refusal)
                for obj in queryset
                if (refusal := modeladmin._lock_for_deletion(request, obj, deleting=deleting)) is not None
            ]
            if not refusals:
                return delete_selected(modeladmin, request, queryset)
        for obj, refusal in refusals:
            messages.error(request, _("%(object)s: %(reason)s") % {"object": obj, "reason": refusal})
        messages.error(request, _("Nothing was deleted."))
        return None

    return delete_selected_under_edit_locks


def _unavailable_message(error: DynamoDBError) -> str:
    return _("Edit locks are unavailable (%(error)s).") % {"error": staff_message(error)}


def _lost_message(edit_lock: EditLock, current: LockInfo | None) -> str:
    """Why a tab's lock is not its own any more, for the person in front of it."""
    if current is None or (current.is_released and not current.released_by):
        reason = _("Your edit lock ran out.")
    elif current.is_released:
        reason = _("%(user)s released your edit lock.") % {"user": current.released_by}
    elif edit_lock.is_mine(current):
        reason = _("You are editing this in another tab now.")
    else:
        holder = edit_lock.held_by(current)
        reason = _("%(holder)s took over editing at %(time)s.") % {
            "holder": holder.holder_name,
            "time": _since(current),
        }
    return f"{reason} {_('This page can no longer save: copy your changes, then reload.')}"
