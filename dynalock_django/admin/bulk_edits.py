"""Changelist writes under edit locks: ``list_editable`` rows, and actions that modify objects.

A change page is not the only way the admin writes a row. Each row a
changelist writes takes its object's edit lock (``EditLockMixin.claim_edit_lock``)
until the changelist's transaction ends, as a deletion does: a row someone
else is editing is refused, with a message naming them, and the others are
written under their locks and through the fence.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.db import models, router, transaction
from django.forms import ModelForm
from django.http import HttpRequest

# Django marks the actions that only read by declaring no permission other than "view".
_READ_ONLY_PERMISSIONS = frozenset({"view"})


def modifies(action: Any) -> bool:
    """An entry of ``get_actions()`` (a tuple before Django 6.1, an Action since) may change objects.

    Unless it declares permissions and they are all "view"
    (``@admin.action(permissions=["view"])``), an action counts as a write.
    """
    func = action[0] if isinstance(action, tuple) else action.func
    permissions = getattr(func, "allowed_permissions", None)
    return not permissions or not set(permissions) <= _READ_ONLY_PERMISSIONS


def changelist_form_under_edit_locks(
    form: type[ModelForm[Any]], claim: Callable[[models.Model], bool]
) -> type[ModelForm[Any]]:
    """``form`` for a ``list_editable`` row: a changed row claims its object; refused, it counts as unchanged.

    The admin saves only the rows whose forms have changed, so a refused
    row is left as it is while the others are saved.
    """

    def clean(self: ModelForm[Any]) -> dict[str, Any] | None:
        cleaned = super(locked, self).clean()
        if self.instance.pk is not None and super(locked, self).has_changed() and not claim(self.instance):
            self.dynalock_refused = True  # type: ignore[attr-defined]
        return cleaned

    def has_changed(self: ModelForm[Any]) -> bool:
        return not getattr(self, "dynalock_refused", False) and super(locked, self).has_changed()

    namespace = {"clean": clean, "has_changed": has_changed, "__module__": form.__module__}
    locked: type[ModelForm[Any]] = type(form.__name__, (form,), namespace)
    return locked


def under_edit_locks(action: Callable[..., Any]) -> Callable[..., Any]:
    """An action that runs on the selected objects nobody else edits, each under its edit lock."""

    @functools.wraps(action)
    def run_under_edit_locks(modeladmin: Any, request: HttpRequest, queryset: models.QuerySet[Any]) -> Any:
        with transaction.atomic(using=router.db_for_write(modeladmin.model)):
            claimed = [obj.pk for obj in queryset if modeladmin.claim_edit_lock(request, obj) is not None]
            if not claimed:
                return None
            return action(modeladmin, request, queryset.filter(pk__in=claimed))

    return run_under_edit_locks
