"""A change page that let its lock go while idle, taking it again ("Continue editing") unless the object changed.

The page kept the user's unsaved input, so the lock may be taken again only
if nobody saved the object since the page was opened: the lock is taken
first (from then on nobody else can save through the admin), then the
object is checked — its fencing token, when it has one, and the admin's
change history — and if it changed, the lock is let go again and the page
is told who changed it and when.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.apps import apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core import signing
from django.db import models
from django.utils import dateformat, timezone
from django.utils.translation import gettext as _

from ...fencing import fencing_field, has_fencing_token
from ...keys import root_model
from .explanations import held_message
from .object_locks import EditLock
from .tickets import EditTicket

_OPENED_SALT = "dynalock_django.edit-page-opened"


def opened_stamp() -> str:
    """When a page was opened, signed: the page sends it back to resume."""
    return signing.dumps(time.time(), salt=_OPENED_SALT)


def opened_at(stamp: str | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(signing.loads(stamp or "", salt=_OPENED_SALT)), UTC)
    except (signing.BadSignature, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Resumed:
    """What taking the lock again came to: ``ticket`` when the page edits again, else ``state`` and why."""

    state: str  # held: the page edits again; busy: someone else holds it; changed: saved by someone meanwhile
    message: str
    ticket: EditTicket | None = None


def resume(edit_lock: EditLock, obj: models.Model, old: EditTicket, opened: datetime) -> Resumed:
    """Take ``obj``'s lock again for an idle page holding ``old`` before, opened at ``opened``."""
    state = edit_lock.open()
    if state.ticket is None:
        busy = state.holder is not None or state.next_in_line is not None
        return Resumed("busy", held_message(state) if busy else _("The edit lock cannot be taken now."))
    changed = _changed_since(obj, old, opened)
    if changed is not None:
        edit_lock.release(state.ticket)
        return Resumed("changed", changed)
    return Resumed("held", _("You are editing this again."), state.ticket)


def same_row_models(model: type[models.Model]) -> list[type[models.Model]]:
    """Every installed model whose instances of a pk are the row of ``model``'s: its proxies, parents and children.

    They share the row's edit lock (:func:`.keys.root_model`), and a change made
    through any of their admins is logged under that model's content type,
    with the same pk (a multi-table child's pk is its parent's).
    """
    root = root_model(model)
    return [other for other in apps.get_models() if root_model(other) is root]


def _changed_since(obj: models.Model, old: EditTicket, opened: datetime) -> str | None:
    """Who changed ``obj`` since ``opened``, for people; None when nobody did."""
    model = type(obj)
    entry = (
        LogEntry.objects.filter(
            content_type__in=list(
                ContentType.objects.get_for_models(*same_row_models(model), for_concrete_models=False).values()
            ),
            object_id=str(obj.pk),
            action_flag=CHANGE,
            action_time__gt=opened,
        )
        .select_related("user")
        .order_by("-action_time")
        .first()
    )
    # A deletion needs no check: the object is gone, and its page is told so (404).
    if entry is not None:
        return _("%(user)s changed this at %(time)s.") % {
            "user": entry.user.get_username(),
            "time": dateformat.format(timezone.localtime(entry.action_time), "H:i"),
        }
    if has_fencing_token(model):
        stored = model._base_manager.filter(pk=obj.pk).values_list(fencing_field(model).attname, flat=True).first()
        if stored is not None and stored > old.fencing_token:
            return _("Someone changed this since you opened the page.")
    return None
