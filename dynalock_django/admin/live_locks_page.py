"""What the live-locks page shows around its rows: relative times, holders linked to users, the filter sidebar.

The rows come from :mod:`dynalock_django.live_lock_rows` (one DynamoDB page);
sorting, the per-model counts and the holders offered as filters are of
that page.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.http import QueryDict
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..live_lock_rows import LockRow, ModelFilter, admin_change_url

HELD_FOR = "held"  # the ``o`` parameter: longest held first; "-held" shortest first


@dataclass(frozen=True)
class LiveLocksPageRow:
    row: LockRow
    held_for: float | None  # seconds, by the holder's clock
    held_since: str  # "3 min ago"
    renewed: str
    holder_url: str | None


@dataclass(frozen=True)
class FilterChoice:
    display: str
    query_string: str
    selected: bool


@dataclass(frozen=True)
class SidebarFilter:
    title: str
    choices: list[FilterChoice]


def ago(moment: datetime | None, now: datetime) -> str:
    """ "3 min ago", for people; "?" when the holder did not say."""
    if moment is None:
        return "?"
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 60:
        return _("%(count)d s ago") % {"count": seconds}
    if seconds < 3600:
        return _("%(count)d min ago") % {"count": seconds // 60}
    if seconds < 86400:
        return _("%(count)d h ago") % {"count": seconds // 3600}
    return ngettext("%(count)d day ago", "%(count)d days ago", seconds // 86400) % {"count": seconds // 86400}


def page_rows(
    rows: list[LockRow], may_view: ModelFilter, admin_site: admin.AdminSite, ordering: str
) -> list[LiveLocksPageRow]:
    """The page's rows for display, sorted by how long they have been held when ``ordering`` asks.

    Holders link to their users for viewers who ``may_view`` users in this admin.
    """
    now = datetime.now(UTC)
    user_model = get_user_model()
    links_users = may_view(user_model)

    def user_url(user_id: str) -> str | None:
        return admin_change_url(user_model, user_id, admin_site) if links_users else None

    shown = [
        LiveLocksPageRow(
            row,
            (now - row.lock.acquired_at).total_seconds() if row.lock.acquired_at else None,
            ago(row.lock.acquired_at, now),
            ago(row.lock.renewed_at, now),
            user_url(row.data.user_id) if row.data is not None and row.data.user_id else None,
        )
        for row in rows
    ]
    if ordering.lstrip("-") == HELD_FOR:
        longest_first = not ordering.startswith("-")
        known = [row for row in shown if row.held_for is not None]
        known.sort(key=lambda row: row.held_for or 0.0, reverse=longest_first)
        return known + [row for row in shown if row.held_for is None]
    return shown


def sidebar(params: QueryDict, rows: list[LockRow], models: list[tuple[str, str]]) -> list[SidebarFilter]:
    """The admin's filter sidebar: by model (those on this page, with their counts), by state, by holder."""
    counts = collections.Counter(row.parsed.model._meta.label_lower for row in rows if row.parsed.model is not None)
    by_model = [_choice(params, "model", None, _("All"))] + [
        _choice(params, "model", label, f"{name} ({counts[label]})")
        for label, name in models
        if counts[label] or params.get("model") == label
    ]
    by_state = [_choice(params, "status", None, _("Held")), _choice(params, "status", "all", _("All, released too"))]
    holders = sorted({row.holder for row in rows})
    by_holder = [_choice(params, "holder", None, _("All"))] + [
        _choice(params, "holder", holder, holder) for holder in holders
    ]
    return [
        SidebarFilter(_("model"), by_model),
        SidebarFilter(_("state"), by_state),
        SidebarFilter(_("holder"), by_holder),
    ]


def _choice(params: QueryDict, name: str, value: str | None, display: str) -> FilterChoice:
    return FilterChoice(
        display, _link_with(params, name, value), params.get(name) == value if value else not params.get(name)
    )


def ordering_link(params: QueryDict) -> str:
    """The "Held for" header's link: longest first, then shortest first."""
    return _link_with(params, "o", f"-{HELD_FOR}" if params.get("o", "") == HELD_FOR else HELD_FOR)


def _link_with(params: QueryDict, name: str, value: str | None) -> str:
    """This page's query with ``name`` set to ``value`` (None: removed), from the first page, as a whole page."""
    query = {key: params[key] for key in params if key not in (name, "cursor", "fragment")}
    if value is not None:
        query[name] = value
    return f"?{urlencode(query)}"
