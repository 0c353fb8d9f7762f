"""Changelist writes under edit locks: ``list_editable`` rows, and actions that modify objects.

A change page is not the only way the admin writes a row. Each row a
changelist writes claims its object's edit lock (:mod:`.claims`) until the
changelist's transaction ends, as a deletion does: a row someone else is
editing is refused, with a message naming them, and the others are written
under their locks and through the fence. "Delete selected" deletes nothing
while any selected object is edited by someone else (:mod:`.deletion`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.db import models, router, transaction
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils.translation import gettext as _

from ...dynamodb import Lease
from ...exceptions import StaleFencingToken
from ...fencing import fenced_refresh, has_fencing_token
from ...keys import key_for_instance
from .claims import claim
from .deletion import deleting_under_edit_locks
from .locked_actions import takes_edit_locks
from .request_state import RequestEditLocks

# Django marks the actions that only read by declaring no permission other than "view".
_READ_ONLY_PERMISSIONS = frozenset({"view"})


def claim_for_write(request: HttpRequest, obj: models.Model, locks: RequestEditLocks) -> Lease | None:
    """``obj``'s edit lock for a write made from the changelist, until the transaction ends.

    None, with a message naming who edits it, when someone else does. The row
    is stamped with the lock's fencing token, so a writer with an older lock
    can no longer write it. The lease is the request's for ``obj`` (``locks``).
    """
    lease, refusal = claim(obj, request.user)
    if lease is not None and has_fencing_token(type(obj)):
        try:
            fenced_refresh(obj, lease)
        except StaleFencingToken as stale:
            lease, refusal = None, str(stale)
    if lease is None:
        messages.error(request, _("%(object)s was not changed: %(reason)s") % {"object": obj, "reason": refusal})
        return None
    locks.claimed[key_for_instance(obj)] = lease
    return lease


def modifies(action: Any) -> bool:
    """An entry of ``get_actions()`` (a tuple before Django 6.1, an Action since) may change objects.

    Unless it declares permissions and they are all "view"
    (``@admin.action(permissions=["view"])``), an action counts as a write.
    """
    permissions = getattr(_func(action), "allowed_permissions", None)
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


def actions_under_edit_locks(actions: dict[str, Any], locks: RequestEditLocks) -> dict[str, Any]:
    """The admin's actions (``get_actions()``), each one that modifies run under the selected objects' edit locks."""
    for name, action in actions.items():
        if name == "delete_selected" and action is not None:
            actions[name] = _replace_func(action, deleting_under_edit_locks)
        elif action is not None and modifies(action) and not takes_edit_locks(_func(action)):
            actions[name] = _replace_func(action, functools.partial(_under_edit_locks, locks=locks))
    return actions


def _under_edit_locks(action: Callable[..., Any], locks: RequestEditLocks) -> Callable[..., Any]:
    """An action that runs on the selected objects nobody else edits, each under its edit lock."""

    @functools.wraps(action)
    def run_under_edit_locks(modeladmin: Any, request: HttpRequest, queryset: models.QuerySet[Any]) -> Any:
        with transaction.atomic(using=router.db_for_write(modeladmin.model)):
            claimed = [obj.pk for obj in queryset if claim_for_write(request, obj, locks) is not None]
            if not claimed:
                return None
            return action(modeladmin, request, queryset.filter(pk__in=claimed))

    return run_under_edit_locks


def _func(action: Any) -> Any:
    """The function of an entry of ``get_actions()``: a tuple before Django 6.1, an Action since."""
    return action[0] if isinstance(action, tuple) else action.func


def _replace_func(action: Any, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Any:
    """An entry of ``get_actions()`` whose function is wrapped: a tuple before Django 6.1, an Action since."""
    if isinstance(action, tuple):
        func, *rest = action
        return (wrap(func), *rest)
    return dataclasses.replace(action, func=wrap(action.func))
