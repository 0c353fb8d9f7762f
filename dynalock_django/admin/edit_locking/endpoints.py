"""The edit-lock URLs under each object's admin URL: the page script's (renew, release, resume, status; ask, wait
and leave for the queue of :mod:`.edit_queue`), and take over.

Every one is an admin view (staff only, CSRF-checked POSTs) and checks the
ModelAdmin's permissions for the object. A request can only act on a lock of
the user who sends it (:mod:`.tickets`), and on that user's own place in line;
taking over someone else's lock also needs the force-release permission, and
puts the user ahead of anyone in line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.defaultfilters import truncatewords
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ...client import wall_now
from ...dynamodb import DynamoDBError, LockLost, LockNotAcquired, span_event
from ...keys import telemetry_attributes
from ...models import FORCE_RELEASE_PERMISSION
from ..breadcrumbs import Crumb, breadcrumbs
from ..staff_messages import staff_message, unavailable_response
from . import asking, edit_queue
from .explanations import held_message, lost_message
from .idle_resume import opened_at, resume
from .object_locks import EditLock
from .object_urls import change_url, endpoint_name
from .tickets import EditTicket, hand_over

if TYPE_CHECKING:
    from django.contrib import admin

# What an endpoint answers: the JSON's content, or a response already made.
Answer = dict[str, Any] | JsonResponse

TAKE_OVER_TEMPLATE = "admin/dynalock_django/edit_lock/take_over_confirmation.html"


class EditLockEndpoints:
    """The edit-lock views of one ModelAdmin's objects; ``urls()`` is what its ``get_urls`` adds."""

    def __init__(self, model_admin: admin.ModelAdmin[Any]) -> None:
        self.model_admin = model_admin

    def urls(self) -> list[URLPattern]:
        views: list[tuple[str, Callable[..., HttpResponse]]] = [
            ("renew", require_POST(self.renew)),
            ("check", require_POST(self.check)),
            ("release", require_POST(self.release)),
            ("resume", require_POST(self.resume)),
            ("ask", require_POST(self.ask)),
            ("wait", require_POST(self.wait)),
            ("leave", require_POST(self.leave)),
            ("status", require_GET(self.status)),
            ("take_over", require_http_methods(["GET", "HEAD", "POST"])(self.take_over)),
        ]
        return [
            path(
                f"<path:object_id>/edit-lock/{action.replace('_', '-')}/",
                self.model_admin.admin_site.admin_view(view),
                name=endpoint_name(self.model_admin, action),
            )
            for action, view in views
        ]

    def renew(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``ticket``: the tab renews its lock (the page calls this every third of the lease).

        The answer says who is waiting to edit, from what the renewal itself returned.
        """

        def renewed(obj: models.Model, edit_lock: EditLock, ticket: EditTicket) -> Answer:
            lease = edit_lock.renew(ticket)
            return {"state": "held", "waiting": edit_queue.waiting_message(lease.waiters, request.user)}

        return self._with_ticket(request, object_id, renewed)

    def check(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``ticket``: the editing tab's look between renewals (one read, no write): still its lock, who waits.

        A visible editing page sends it every few seconds, so that an ask, a
        take-over or a forced release reach its user within seconds, not at the
        next renewal (a third of the lease).
        """

        def checked(obj: models.Model, edit_lock: EditLock, ticket: EditTicket) -> Answer:
            current = edit_lock.check(ticket)
            return {"state": "held", "waiting": edit_queue.waiting_message(current.waiters, request.user)}

        return self._with_ticket(request, object_id, checked)

    def release(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``ticket``: the tab lets its lock go (sent by the page as it unloads)."""

        def released(obj: models.Model, edit_lock: EditLock, ticket: EditTicket) -> Answer:
            if request.POST.get("idle"):  # the page went idle (not closed): an event on the request's span
                span_event("dynalock.edit.idle_release", telemetry_attributes(edit_lock.key))
            edit_lock.release(ticket)
            return {"state": "released"}

        return self._with_ticket(request, object_id, released)

    def resume(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST ``ticket`` and ``opened``: a page that let its lock go while idle takes it again."""

        def resumed(obj: models.Model, edit_lock: EditLock, ticket: EditTicket) -> Answer:
            opened = opened_at(request.POST.get("opened"))
            if opened is None:
                return _invalid()
            again = resume(edit_lock, obj, ticket, opened)
            return {"state": again.state, "message": again.message} | (
                {"ticket": str(again.ticket)} if again.ticket else {}
            )

        return self._with_ticket(request, object_id, resumed)

    def ask(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: "Ask to edit" on a read-only page puts the user in line for the lock (or gives it, if free)."""
        return self._answer(request, object_id, lambda obj, edit_lock: self._turn(request, obj, asking.ask(edit_lock)))

    def wait(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: a waiting page's poll keeps the user in line; at their turn it takes the lock for the page."""
        return self._answer(request, object_id, lambda obj, edit_lock: self._turn(request, obj, asking.wait(edit_lock)))

    def leave(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: a waiting page went away (sent as it unloads): its user leaves the line."""

        def left(obj: models.Model, edit_lock: EditLock) -> Answer:
            asking.leave(edit_lock)
            return {"state": "left"}

        return self._answer(request, object_id, left)

    def status(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: who holds the lock, for a read-only page waiting for it to free."""
        obj, edit_lock = self._edit_lock_for(request, object_id)
        if not self.model_admin.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        try:
            current = edit_lock.read()
        except DynamoDBError as error:
            return JsonResponse({"state": "unavailable", "message": staff_message(error)}, status=503)
        if edit_lock.is_free(current):
            first = edit_queue.next_in_line(current.waiters if current else (), request.user)
            if first is not None:  # free, but kept for whoever asked first
                return JsonResponse({"state": "next", "message": edit_queue.kept_for_message(first.name)})
            return JsonResponse({"state": "free"})
        state = edit_lock.held_by(current)
        return JsonResponse({"state": "held", "holder": state.holder_name, "message": held_message(state)})

    def take_over(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: confirm taking over the holding shown; POST ``fencing_token`` (that holding): take it.

        Taking over one's own lock (another tab) needs only the change
        permission; someone else's needs the force-release permission too.
        """
        obj, edit_lock = self._edit_lock_for(request, object_id)
        if not self.model_admin.has_change_permission(request, obj):
            raise PermissionDenied
        try:
            return self._take_over(request, obj, edit_lock)
        except DynamoDBError as error:
            return unavailable_response(request, self.model_admin, error)

    def _take_over(self, request: HttpRequest, obj: models.Model, edit_lock: EditLock) -> HttpResponse:
        back = change_url(self.model_admin, obj)
        current = edit_lock.read()
        if current is None or edit_lock.is_free(current):
            return HttpResponseRedirect(back)  # nobody to take it from: the page takes it
        if not edit_lock.is_mine(current) and not request.user.has_perm(FORCE_RELEASE_PERMISSION):
            raise PermissionDenied
        holder = edit_lock.held_by(current)
        if request.method != "POST":
            title = _("Take over editing")
            site, opts = self.model_admin.admin_site, self.model_admin.opts
            context = {
                **site.each_context(request),
                **breadcrumbs(site, opts, Crumb(truncatewords(str(obj), 18), back), Crumb(title)),
                "opts": opts,
                "object": obj,
                "holder": holder,
                "title": title,
                "change_url": back,
                "waiting": [waiter.name for waiter in edit_queue.live_waiters(current.waiters, wall_now().timestamp())],
            }
            return TemplateResponse(request, TAKE_OVER_TEMPLATE, context)
        if request.POST.get("fencing_token") != str(current.fencing_token):
            return _nothing_taken_over(request, back)  # not the holding the confirmation page showed
        try:
            state = edit_lock.take_over(current)
        except LockNotAcquired:
            return _nothing_taken_over(request, back)
        if not holder.holder_is_me:
            self.model_admin.log_change(
                request, obj, _("Took over the edit lock held by %(holder)s.") % {"holder": holder.holder_name}
            )
        response = HttpResponseRedirect(back)
        assert state.ticket is not None
        hand_over(response, state.ticket, back, secure=request.is_secure())
        return response

    def _turn(self, request: HttpRequest, obj: models.Model, turn: asking.Turn) -> JsonResponse:
        """A turn's answer; one that took the lock leaves its ticket for the page's reload, which then edits."""
        response = JsonResponse({"state": turn.state, "message": turn.message})
        if turn.ticket is not None:
            hand_over(response, turn.ticket, change_url(self.model_admin, obj), secure=request.is_secure())
        return response

    def _with_ticket(
        self, request: HttpRequest, object_id: str, action: Callable[[models.Model, EditLock, EditTicket], Answer]
    ) -> HttpResponse:
        ticket = EditTicket.parse(request.POST.get("ticket"))
        return self._answer(
            request, object_id, lambda obj, edit_lock: _invalid() if ticket is None else action(obj, edit_lock, ticket)
        )

    def _answer(
        self, request: HttpRequest, object_id: str, action: Callable[[models.Model, EditLock], Answer]
    ) -> HttpResponse:
        """The script's endpoints: a user who may change the object acts on its lock; the answer is JSON."""
        obj, edit_lock = self._edit_lock_for(request, object_id)
        if not self.model_admin.has_change_permission(request, obj):
            raise PermissionDenied
        try:
            answer = action(obj, edit_lock)
        except LockLost as lost:
            return JsonResponse({"state": "lost", "message": lost_message(edit_lock, lost.current)}, status=409)
        except DynamoDBError as error:
            return JsonResponse({"state": "unavailable", "message": staff_message(error)}, status=503)
        return answer if isinstance(answer, JsonResponse) else JsonResponse(answer)

    def _edit_lock_for(self, request: HttpRequest, object_id: str) -> tuple[models.Model, EditLock]:
        obj = self.model_admin.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(_("No such object."))
        return obj, EditLock(obj, request.user)


def _invalid() -> JsonResponse:
    return JsonResponse({"state": "invalid", "message": _("No valid ticket was sent.")}, status=400)


def _nothing_taken_over(request: HttpRequest, back: str) -> HttpResponse:
    messages.warning(request, _("The edit lock changed hands meanwhile; nothing was taken over."))
    return HttpResponseRedirect(back)
