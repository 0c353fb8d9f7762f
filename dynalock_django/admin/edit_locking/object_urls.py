"""An object's admin URLs: the object a URL names, its change page, and its edit-lock endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.admin.utils import quote, unquote
from django.db import models
from django.http import HttpRequest
from django.urls import reverse

if TYPE_CHECKING:
    from django.contrib import admin


def object_for(
    model_admin: admin.ModelAdmin[Any], request: HttpRequest, object_id: str, to_field: str | None = None
) -> models.Model | None:
    """The object ``object_id`` names (through ``to_field`` when the admin allows it), or None."""
    if to_field and not model_admin.to_field_allowed(request, to_field):
        return None
    return model_admin.get_object(request, unquote(object_id), to_field)


def change_url(model_admin: admin.ModelAdmin[Any], obj: models.Model) -> str:
    opts = model_admin.opts
    return reverse(f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)])


def endpoint_name(model_admin: admin.ModelAdmin[Any], action: str) -> str:
    """The URL name of an edit-lock endpoint (``renew``, ``release``, ``status``, ``take_over``)."""
    return f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_edit_lock_{action}"


def endpoint_url(model_admin: admin.ModelAdmin[Any], action: str, obj: models.Model) -> str:
    return reverse(f"{model_admin.admin_site.name}:{endpoint_name(model_admin, action)}", args=[quote(obj.pk)])
