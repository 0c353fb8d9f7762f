"""The changelist's "Being edited" column: who edits each row on the page, read in one BatchGetItem.

The column is ``EDIT_LOCK_COLUMN`` in ``list_display``: added at the end
unless the ModelAdmin places it itself, left out when its
``edit_lock_column`` is False. The locks of the page's rows are read once,
when the changelist has picked its rows; if DynamoDB fails, the list is
shown without the column, with a notice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.contrib.admin.views.main import ChangeList
from django.http import HttpRequest
from django.utils.translation import gettext as _

from ...client import get_client, wall_now
from ...dynamodb import DynamoDBError, LockInfo
from ...keys import key_for_instance
from ...live_lock_rows import describe, holder_label
from ...models import VIEW_LOCK_PERMISSION
from ..staff_messages import paused_message, staff_message
from .tickets import is_users_tab

EDIT_LOCK_COLUMN = "edit_lock_status"


def with_edit_lock_column(list_display: Sequence[Any], wanted: bool) -> list[Any]:
    """``list_display`` with the column at the end, unless placed in it already; without it when not ``wanted``."""
    columns = [column for column in list_display if wanted or column != EDIT_LOCK_COLUMN]
    if wanted and EDIT_LOCK_COLUMN not in columns:
        columns.append(EDIT_LOCK_COLUMN)
    return columns


def editors_on_page(request: HttpRequest, changelist: ChangeList) -> dict[str, str]:
    """What the column says for each row of the page, by lock key (one BatchGetItem per 100 rows; none for no rows).

    A POST (an action, a list_editable save) is answered without the column and
    costs no read: it mostly answers with a redirect or another page. When DynamoDB
    fails: nothing, the column taken off the list and a notice given.
    """
    if EDIT_LOCK_COLUMN not in changelist.list_display:
        return {}
    if request.method != "GET":
        _without_column(changelist)
        return {}
    try:
        locks = get_client().get_many(key_for_instance(row) for row in changelist.result_list)
    except DynamoDBError as error:
        _without_column(changelist)
        messages.warning(
            request,
            paused_message(error) or f"{_('Who is editing which row cannot be shown.')} {staff_message(error)}",
        )
        return {}
    now, shows_hosts = wall_now(), request.user.has_perm(VIEW_LOCK_PERMISSION)
    return {key: editor_label(lock, request.user, now, shows_hosts=shows_hosts) for key, lock in locks.items()}


def _without_column(changelist: ChangeList) -> None:
    changelist.list_display = [column for column in changelist.list_display if column != EDIT_LOCK_COLUMN]


def editor_label(lock: LockInfo, user: Any, now: datetime, *, shows_hosts: bool = False) -> str:
    """What the column says for a row: "alice, 3 min", "you", or nothing when nobody is editing it.

    A row locked by code is named by its host and pid only when ``shows_hosts``
    (the user may see the live-locks page); else "a background job".
    """
    if describe(lock).state != "held":
        return ""
    if is_users_tab(lock.owner_name, user):
        return _("you")
    holder = holder_label(lock, shows_hosts=shows_hosts)
    if lock.acquired_at is None:
        return holder
    minutes = int((now - lock.acquired_at).total_seconds() // 60)
    return _("%(holder)s, %(duration)s") % {"holder": holder, "duration": _duration(max(0, minutes))}


def _duration(minutes: int) -> str:
    if minutes < 60:
        return _("%(minutes)d min") % {"minutes": minutes}
    return _("%(hours)d h %(minutes)d min") % {"hours": minutes // 60, "minutes": minutes % 60}
