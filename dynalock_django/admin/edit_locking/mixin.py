"""``EditLockMixin``: the ModelAdmin hooks through which edit locks take part in the admin's own views.

Each hook hands the work to the module that owns it; what one request
decided is carried by the copy of the ModelAdmin the request runs on
(:mod:`.request_state`), never by the request object.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.options import TO_FIELD_VAR
from django.contrib.admin.views.main import ChangeList
from django.core.checks import CheckMessage, Warning
from django.db import models, router, transaction
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern
from django.utils.encoding import escape_uri_path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ...exceptions import StaleFencingToken
from ...fencing import fenced_save, has_fencing_token
from ...keys import key_for_instance
from ...transactions import release_when_transaction_ends
from .bulk_edits import actions_under_edit_locks, changelist_form_under_edit_locks, claim_for_write
from .change_page import checked_before_save, open_page, page_context, save_without_lock, show_edit_lock
from .changelist_column import editors_on_page, with_edit_lock_column
from .deletion import delete_under_edit_lock
from .edit_queue import poll_period_problems
from .endpoints import EditLockEndpoints
from .object_urls import object_for
from .request_state import RequestEditLocks
from .tickets import forget_handoff, hand_over

if TYPE_CHECKING:  # django-stubs makes ModelAdmin generic; Django's class is not subscriptable
    _ModelAdmin = admin.ModelAdmin[Any]
else:
    _ModelAdmin = admin.ModelAdmin


class EditLockMixin(_ModelAdmin):
    """Put first in the bases: ``class CustomerAdmin(EditLockMixin, admin.ModelAdmin)``."""

    # How often a read-only page asks whether the lock has freed.
    edit_lock_poll_seconds = 3.0
    # How often a visible editing page looks whether someone asked, took over or released its lock (one read).
    edit_lock_check_seconds = 4.0
    # The changelist's "Being edited" column: at the end of list_display unless placed there
    # (as "edit_lock_status"); False leaves it out (and spares the changelist its read).
    edit_lock_column = True

    # None on the registered admin; set on the copy that one change page or changelist request runs on.
    _edit_locks: RequestEditLocks | None = None

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        working = self._for_request()
        if request.method == "GET":
            obj = object_for(working, request, object_id, request.GET.get(TO_FIELD_VAR))
            if obj is not None:  # else the change view answers: not found, or a to_field it refuses
                working._locks().page = open_page(working, request, obj)
        try:
            response = super(EditLockMixin, working).change_view(request, object_id, form_url, extra_context)
        except StaleFencingToken as stale:
            # A newer lock's write reached the row first; the admin's transaction rolled back.
            messages.error(request, _("Nothing was saved: %(error)s") % {"error": stale})
            return HttpResponseRedirect(request.get_full_path())
        forget_handoff(request, response)
        return response

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        page = self._locks().page
        # Only a page shown (GET) turns read-only. A POST is judged by its ticket when its form
        # validates: a refusal is a form error, and the user's input stays on the page.
        if not allowed or obj is None or page is None or request.method != "GET":
            return allowed
        if page.state.ticket is not None or page.state.unlocked:
            return allowed
        return page.state.key != key_for_instance(obj)

    def get_form(
        self, request: HttpRequest, obj: models.Model | None = None, change: bool = False, **kwargs: Any
    ) -> type[ModelForm[Any]]:
        form = super().get_form(request, obj, change, **kwargs)
        if request.method != "POST" or not change or obj is None:
            return form
        return checked_before_save(form, request, obj, self._locks())

    def save_model(self, request: HttpRequest, obj: models.Model, form: Any, change: bool) -> None:
        lease, page = self._locks().lease_for(obj), self._locks().page
        if lease is not None and has_fencing_token(type(obj)):
            fenced_save(obj, lease)
        elif page is not None and page.state.unlocked:
            save_without_lock(request, obj)
        else:
            super().save_model(request, obj, form, change)

    def response_change(self, request: HttpRequest, obj: models.Model) -> HttpResponse:
        response = super().response_change(request, obj)
        page = self._locks().page
        if page is None or page.lease is None or page.state.ticket is None:
            return response
        if "_continue" in request.POST:
            # The tab's next page takes the lock over; the page sets this too, but it may lack JavaScript.
            hand_over(response, page.state.ticket, escape_uri_path(request.path), secure=request.is_secure())
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
        page = self._locks().page
        if not add and obj is not None and page is not None and isinstance(response, TemplateResponse):
            edit_lock_context = page_context(
                self,
                request,
                obj,
                page,
                poll_seconds=self.edit_lock_poll_seconds,
                check_seconds=self.edit_lock_check_seconds,
            )
            show_edit_lock(response, page, edit_lock_context)
        return response

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Deletes under the object's edit lock: nothing is deleted while someone else edits it."""
        delete_view = functools.partial(super().delete_view, request, object_id, extra_context)
        return delete_under_edit_lock(self, request, object_id, delete_view)

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        """The admin's actions, each one that modifies run under the edit locks of the selected objects.

        "Delete selected" deletes nothing while any of them is edited by
        someone else; other actions run on the objects nobody else edits.
        """
        # Django 6.1 passes action_location (and warns about overrides without it); 5.2 has no such argument.
        get_actions: Callable[..., dict[str, Any]] = super().get_actions
        actions = get_actions(request) if action_location is None else get_actions(request, action_location)
        return actions_under_edit_locks(actions, self._locks())

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        changelist_view = super(EditLockMixin, self._for_request()).changelist_view
        if request.method != "POST" or "_save" not in request.POST:
            return changelist_view(request, extra_context)
        try:
            # The list_editable rows take their edit locks as their forms are cleaned, held until this ends.
            with transaction.atomic(using=router.db_for_write(self.model)):
                return changelist_view(request, extra_context)
        except StaleFencingToken as stale:
            # A newer lock's write reached a row first; every row of this save rolled back with it.
            messages.error(request, _("Nothing was saved: %(error)s") % {"error": stale})
            return HttpResponseRedirect(request.get_full_path())

    def get_list_display(self, request: HttpRequest) -> Any:
        return with_edit_lock_column(super().get_list_display(request), self.edit_lock_column)

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        changelist = super().get_changelist_instance(request)
        self._locks().editors = editors_on_page(request, changelist)
        return changelist

    @admin.display(description=gettext_lazy("Being edited"), empty_value="")
    def edit_lock_status(self, obj: models.Model) -> str:
        """The changelist column: "alice, 3 min" for a row someone else edits, "you" for one's own tabs."""
        return self._locks().editors.get(key_for_instance(obj), "")

    def get_changelist_form(self, request: HttpRequest, **kwargs: Any) -> type[ModelForm[Any]]:
        form = super().get_changelist_form(request, **kwargs)
        locks = self._locks()
        return changelist_form_under_edit_locks(form, lambda obj: claim_for_write(request, obj, locks) is not None)

    def get_urls(self) -> list[URLPattern]:
        return EditLockEndpoints(self).urls() + super().get_urls()

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
        return messages_ + poll_period_problems(self)

    def _for_request(self) -> EditLockMixin:
        """A copy of this admin for one request to work on, with that request's edit locks."""
        working = copy.copy(self)
        working._edit_locks = RequestEditLocks()
        return working

    def _locks(self) -> RequestEditLocks:
        # Outside the views that make a copy (code calling the hooks itself), each call decides afresh.
        return self._edit_locks if self._edit_locks is not None else RequestEditLocks()
