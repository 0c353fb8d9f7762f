"""The admin's live-locks page: who holds what, and force release for those allowed to.

Registered on the unmanaged ``Lock`` model (django-rq's pattern): Django's
own permissions decide who sees it (``dynalock_django.view_lock``) and who may
take a lock away (``dynalock_django.force_release``). The model has no table,
so of the admin's URLs only the changelist (the live-locks page) is kept; an
object's "change" URL, where the admin log links a release to, leads to the
live-locks page filtered on that key.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.apps import apps
from django.contrib import admin, messages
from django.contrib.admin.exceptions import NotRegistered
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_permission_codename
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_safe

from ..client import get_client, wall_now
from ..conf import dynalock_settings
from ..dynamodb import DynalockError, DynamoDBError, InvalidLockRequest, LockInfo, LockNotAcquired
from ..key_scope import in_current_scope, key_head
from ..keys import described_as_read
from ..live_lock_rows import LockRow, ModelFilter, describe, load_page, with_objects
from ..models import FORCE_RELEASE_PERMISSION, Lock
from .breadcrumbs import Crumb, breadcrumbs
from .live_lock_sets import grouped
from .live_locks_page import activity, changelist_for, clock, ordering_link, page_rows, sidebar
from .staff_messages import paused_message, staff_message, unavailable_response

if TYPE_CHECKING:  # django-stubs makes ModelAdmin generic; Django's class is not subscriptable
    _ModelAdmin = admin.ModelAdmin[Lock]
else:
    _ModelAdmin = admin.ModelAdmin


# The filter that finds locks taken by clients that keep no live mark (the AWS Java client), at the cost of a full scan.
OTHER_CLIENTS = "other_clients"


@admin.register(Lock)
class LiveLocksAdmin(_ModelAdmin):
    """The admin's live-locks page: the table's held locks, page by page, for staff with ``view_lock``."""

    list_per_page = 100  # items read per DynamoDB request
    refresh_seconds = 5

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Lock | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Lock | None = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        site = self.admin_site
        release = require_http_methods(["GET", "HEAD", "POST"])(self.force_release_view)
        return [
            path("", site.admin_view(require_safe(self.changelist_view)), name="dynalock_django_lock_changelist"),
            path("release/", site.admin_view(release), name="dynalock_django_live_locks_release"),
            path(
                "<path:object_id>/change/",
                site.admin_view(require_safe(self.lock_change_view)),
                name="dynalock_django_lock_change",
            ),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        params = request.GET
        may_view = self._model_filter(request)
        model = _model_or_none(params.get("model", ""))
        try:
            page = load_page(
                get_client(),
                cursor=params.get("cursor") or None,
                page_size=self.list_per_page,
                model=model if model is not None and may_view(model) else None,
                search=params.get("q", ""),
                holder=params.get("holder", ""),
                show_all=params.get("status") == "all",
                other_clients=params.get(OTHER_CLIENTS) == "1",
                admin_site=self.admin_site,
                may_view=may_view,
            )
            error = None
        except DynalockError as failure:  # a missing table, DynamoDB down: say so on the page
            shown = paused_message(failure) or f"{_('The live locks cannot be shown.')} {staff_message(failure)}"
            page, error = None, shown
        rows = page.rows if page is not None else []
        # The page refreshes its rows alone (?fragment=1), without the sidebar.
        filters = [] if params.get("fragment") else sidebar(params, rows, _lockable_models(may_view))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "cl": changelist_for(self.opts, params, filters),
            "title": _("Live locks"),
            "page": page,
            "rows": grouped(page_rows(rows, may_view, self.admin_site, params.get("o", ""))),
            "filters": filters,
            "held_for_link": ordering_link(params),
            "error": error,
            "params": params,
            "can_force_release": request.user.has_perm(FORCE_RELEASE_PERMISSION),
            "refresh_seconds": self.refresh_seconds,
            **(extra_context or {}),
        }
        template = "rows" if params.get("fragment") else "change_list"
        return TemplateResponse(request, f"admin/dynalock_django/live_locks/{template}.html", context)

    def lock_change_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Where the admin log links a lock to: the live-locks page, on that key."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        key, prefix = unquote(object_id), key_head()
        search = key[len(prefix) :] if key.startswith(prefix) else key
        return HttpResponseRedirect(f"{self._changelist_url()}?{urlencode({'q': search, 'status': 'all'})}")

    def force_release_view(self, request: HttpRequest) -> HttpResponse:
        """GET: a confirmation page saying who holds the lock; POST (CSRF-checked): release that holding.

        The form carries the holding it showed (owner and fencing token): if
        the lock changed hands since, nothing is released and the operator is
        shown who holds it now.
        """
        if not request.user.has_perm(FORCE_RELEASE_PERMISSION):
            raise PermissionDenied
        confirmed = request.method == "POST"
        form = request.POST if confirmed else request.GET
        key = form.get("key", "")
        if not key:
            return HttpResponseBadRequest(_("Which lock? Pass its key."))
        if not _in_scope(key):
            messages.error(
                request,
                _("This lock belongs to another project that shares the lock table, so it cannot be released here."),
            )
            return HttpResponseRedirect(self._changelist_url())
        try:
            lock = get_client().get(key)
        except InvalidLockRequest as invalid:
            return HttpResponseBadRequest(str(invalid))
        except DynamoDBError as error:
            return unavailable_response(request, self, error)
        if lock is None or lock.is_released:
            messages.info(request, _("Nobody holds this lock any more: there is nothing to release."))
            return HttpResponseRedirect(self._changelist_url())
        [row] = with_objects([describe(lock)], self.admin_site, self._model_filter(request))
        if not confirmed:
            title = _("Release the lock on %(name)s") % {"name": row.display_name}
            context = {
                **self.admin_site.each_context(request),
                **breadcrumbs(self.admin_site, self.opts, Crumb(title)),
                "opts": self.opts,
                "title": title,
                "row": row,
                "activity": activity(row),
                "taken_at": clock(row.lock.acquired_at, wall_now()) if row.lock.acquired_at else "",
                "holding": _holding(lock),
            }
            return TemplateResponse(request, "admin/dynalock_django/live_locks/release_confirmation.html", context)
        if (form.get("owner", ""), form.get("fencing_token", "")) != _holding(lock):
            return self._changed_hands(request, row, row)
        try:
            released_by, described = request.user.get_username(), described_as_read(lock.key)
            get_client().force_release(lock, released_by=released_by, described=described)
        except LockNotAcquired as changed:
            return self._changed_hands(request, row, describe(changed.holder) if changed.holder else None)
        except DynamoDBError as error:
            return unavailable_response(request, self, error)
        self.log_change(
            request, _logged_object(row), _("Force-released the lock held by %(holder)s.") % {"holder": row.holder}
        )
        messages.success(
            request,
            _("Released the lock on %(name)s that %(holder)s held. Anyone may take it now.")
            % {"name": row.display_name, "holder": row.holder},
        )
        return HttpResponseRedirect(self._changelist_url())

    def _changed_hands(self, request: HttpRequest, shown: LockRow, now: LockRow | None) -> HttpResponse:
        """Nothing released: the lock is not the holding the operator confirmed any more."""
        name = shown.display_name
        if now is None or now.lock.is_released:
            messages.warning(
                request, _("Nothing was released: the lock on %(name)s was let go meanwhile.") % {"name": name}
            )
            return HttpResponseRedirect(self._changelist_url())
        messages.warning(
            request,
            _("Nothing was released: %(holder)s holds the lock on %(name)s now. Release it again if you still must.")
            % {"holder": now.holder, "name": name},
        )
        release_url = reverse(f"{self.admin_site.name}:dynalock_django_live_locks_release")
        return HttpResponseRedirect(f"{release_url}?{urlencode({'key': now.lock.key})}")

    def _changelist_url(self) -> str:
        return reverse(f"{self.admin_site.name}:dynalock_django_lock_changelist")

    def _model_filter(self, request: HttpRequest) -> ModelFilter:
        """Whether this request's user may see objects of a model: its admin's view permission, else the user's."""

        @functools.cache
        def may_view(model: type[models.Model]) -> bool:
            try:
                return self.admin_site.get_model_admin(model).has_view_or_change_permission(request)
            except NotRegistered:
                opts = model._meta
                return any(
                    request.user.has_perm(f"{opts.app_label}.{get_permission_codename(action, opts)}")
                    for action in ("view", "change")
                )

        return may_view


def _holding(lock: LockInfo) -> tuple[str, str]:
    """What identifies a holding for the operator's confirmation: its owner and fencing token."""
    return lock.owner_name or "", "" if lock.fencing_token is None else str(lock.fencing_token)


def _in_scope(key: str) -> bool:
    return dynalock_settings.ADMIN_SHOWS_ALL_KEYS or in_current_scope(key)


def _logged_object(row: LockRow) -> Any:
    """The admin log records the release against the locked object, or against the lock for a named lock."""
    model, pk = row.parsed.model, row.parsed.object_pk
    if model is not None and pk is not None:
        found = model._base_manager.filter(pk=pk).first()
        if found is not None:
            return found
    return Lock(key=row.lock.key)


def _lockable_models(may_view: ModelFilter) -> list[tuple[str, str]]:
    return sorted(
        (model._meta.label_lower, str(model._meta.verbose_name_plural).capitalize())
        for model in apps.get_models()
        if model._meta.managed and not model._meta.proxy and may_view(model)
    )


def _model_or_none(label: str) -> Any:
    if not label:
        return None
    try:
        return apps.get_model(label)
    except (LookupError, ValueError):
        return None
