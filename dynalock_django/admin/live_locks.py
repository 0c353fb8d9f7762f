"""The admin's live-locks dashboard: who holds what, and force release for those allowed to.

Registered on the unmanaged ``Lock`` model (django-rq's pattern): Django's
own permissions decide who sees it (``dynalock_django.view_lock``) and who may
take a lock away (``dynalock_django.force_release``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _

from ..client import get_client
from ..dashboard import describe, load_page
from ..dynamodb import DynalockError, LockNotAcquired
from ..models import Lock

FORCE_RELEASE_PERMISSION = "dynalock_django.force_release"

if TYPE_CHECKING:  # django-stubs makes ModelAdmin generic; Django's class is not subscriptable
    _LockModelAdmin = admin.ModelAdmin[Lock]
else:
    _LockModelAdmin = admin.ModelAdmin


@admin.register(Lock)
class LockAdmin(_LockModelAdmin):
    list_per_page = 100  # items read per DynamoDB request
    refresh_seconds = 5

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Lock | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Lock | None = None) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        release = self.admin_site.admin_view(self.force_release_view)
        return [path("release/", release, name="dynalock_django_lock_release"), *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        params = request.GET
        model = _model_or_none(params.get("model", ""))
        try:
            page = load_page(
                get_client(),
                cursor=params.get("cursor") or None,
                page_size=self.list_per_page,
                model=model,
                search=params.get("q", ""),
                holder=params.get("holder", ""),
                show_all=params.get("status") == "all",
                admin_site=self.admin_site,
            )
            error = None
        except DynalockError as failure:  # a missing table, DynamoDB down: say so on the page
            page, error = None, str(failure)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": _("Live locks"),
            "page": page,
            "error": error,
            "params": params,
            "models": _lockable_models(),
            "can_force_release": request.user.has_perm(FORCE_RELEASE_PERMISSION),
            "refresh_seconds": self.refresh_seconds,
            **(extra_context or {}),
        }
        template = "rows" if params.get("fragment") else "change_list"
        return TemplateResponse(request, f"admin/dynalock_django/lock/{template}.html", context)

    def force_release_view(self, request: HttpRequest) -> HttpResponse:
        """GET: a confirmation page saying who holds the lock; POST (CSRF-checked): take it away."""
        if not request.user.has_perm(FORCE_RELEASE_PERMISSION):
            raise PermissionDenied
        key = request.POST.get("key") if request.method == "POST" else request.GET.get("key")
        if not key:
            return HttpResponseBadRequest(_("Which lock? Pass its key."))
        changelist = reverse(f"{self.admin_site.name}:dynalock_django_lock_changelist")
        lock = get_client().get(key)
        if lock is None or lock.is_released:
            messages.info(request, _("The lock %(key)s is not held any more.") % {"key": key})
            return HttpResponseRedirect(changelist)
        row = describe(lock)
        if request.method == "GET":
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "row": row,
                "title": _("Release lock"),
            }
            return TemplateResponse(request, "admin/dynalock_django/lock/release_confirmation.html", context)
        released_by = request.user.get_username()
        try:
            get_client().force_release(lock, released_by=released_by)
        except LockNotAcquired:
            messages.warning(
                request, _("The lock %(key)s changed hands meanwhile; nothing was released.") % {"key": key}
            )
            return HttpResponseRedirect(changelist)
        self.log_change(
            request, _logged_object(row), _("Force-released the lock held by %(holder)s.") % {"holder": row.holder}
        )
        messages.success(request, _("Released the lock held by %(holder)s.") % {"holder": row.holder})
        return HttpResponseRedirect(changelist)


def _logged_object(row: Any) -> Any:
    """The admin log records the release against the locked object, or against the lock for a named lock."""
    model = row.parsed.model
    if model is not None:
        found = model._base_manager.filter(pk=row.parsed.pk_value).first()
        if found is not None:
            return found
    return Lock(key=row.lock.key)


def _lockable_models() -> list[tuple[str, str]]:
    return sorted(
        (model._meta.label_lower, str(model._meta.verbose_name_plural).capitalize())
        for model in apps.get_models()
        if model._meta.managed and not model._meta.proxy
    )


def _model_or_none(label: str) -> Any:
    if not label:
        return None
    try:
        return apps.get_model(label)
    except (LookupError, ValueError):
        return None
