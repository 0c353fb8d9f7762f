"""What the live-locks page shows around its rows: times for people, holders linked to users, the filter sidebar.

The rows come from :mod:`dynalock_django.live_lock_rows` (one DynamoDB page);
sorting, the per-model counts and the holders offered as filters are of
that page. The page is Django's own ``admin/change_list.html``, extended: it
reads the search form, the sidebar and the breadcrumbs from ``cl``, which
:class:`LiveLocksChangeList` stands in for, as those rows are no queryset.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models.options import Options
from django.http import QueryDict
from django.utils import dateformat, timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ..client import wall_now
from ..live_lock_rows import LockRow, ModelFilter, admin_change_url

HELD_FOR = "held"  # the ``o`` parameter: longest held first; "-held" shortest first
# Parameters of the page that are not filters of the sidebar: "Clear all filters" keeps them.
NOT_FILTERS = ("q", "o", "cursor", "fragment")
# What an edit lock's holder is doing (its payload's purpose), in staff words.
ACTIVITIES = {"edit": gettext_lazy("editing")}


@dataclass(frozen=True)
class LiveLocksPageRow:
    row: LockRow
    held_for: float | None  # seconds, by the holder's clock
    held_since: str  # "since 10:02", "just now"
    activity: str  # "editing", or the lock's purpose as its code gave it
    holder_url: str | None
    stopped_at: str  # a dead lock's last renewal ("10:02"), else ""


@dataclass(frozen=True)
class FilterChoice:
    display: str
    query_string: str
    selected: bool


@dataclass(frozen=True)
class SidebarFilter:
    """A filter of the sidebar, as Django's ``admin_list_filter`` tag renders one (``admin/filter.html``)."""

    title: str
    options: list[FilterChoice]
    template: str = "admin/filter.html"

    def choices(self, changelist: Any) -> list[FilterChoice]:
        return self.options


@dataclass(frozen=True)
class LiveLocksChangeList:
    """What Django's change-list template reads of ``cl``: the breadcrumbs, search form and sidebar.

    The rows and the pagination (a DynamoDB cursor, not page numbers) are
    the page's own blocks.
    """

    opts: Options[Any]
    params: dict[str, str]  # carried by the search form, as hidden fields
    query: str
    filter_specs: list[SidebarFilter]
    clear_all_filters_qs: str
    has_active_filters: bool
    search_help_text: str
    search_fields: tuple[str, ...] = ("key",)
    has_filters: bool = True
    is_facets_optional: bool = False
    add_facets: bool = False
    is_popup: bool = False
    formset: None = None
    # Equal: the search form shows no "n results (m total)"; the page counts its locks itself.
    result_count: int = 0
    full_result_count: int = 0


def changelist_for(opts: Options[Any], params: QueryDict, filters: list[SidebarFilter]) -> LiveLocksChangeList:
    kept = {name: str(params[name]) for name in params if name not in ("q", "cursor", "fragment")}
    active = any(name not in NOT_FILTERS for name in params)
    clear = {name: str(params[name]) for name in params if name in ("q", "o")}
    return LiveLocksChangeList(
        opts,
        kept,
        params.get("q", ""),
        filters,
        f"?{urlencode(clear)}",
        active,
        _("Finds the locks whose key starts with what you type."),
    )


def since(moment: datetime | None, now: datetime) -> str:
    """ "since 10:02" in the current time zone (with the day when not today); "just now" within a minute.

    The moment is the holder's wall clock (display only); one ahead of ours is "just now" too.
    """
    if moment is None:
        return _("since an unknown time")
    if now - moment < timedelta(minutes=1):
        return _("just now")
    return _("since %(time)s") % {"time": clock(moment, now)}


def clock(moment: datetime, now: datetime) -> str:
    """10:02, or "2 Jan, 10:02" on another day than ``now`` (local time); "?" past the dates there are."""
    try:
        local, today = timezone.localtime(moment), timezone.localtime(now)
    except (OverflowError, OSError, ValueError):
        return "?"
    return dateformat.format(local, "H:i" if local.date() == today.date() else "j M, H:i")


def activity(row: LockRow) -> str:
    purpose = row.data.purpose if row.data is not None else ""
    return str(ACTIVITIES[purpose]) if purpose in ACTIVITIES else purpose


def page_rows(
    rows: list[LockRow], may_view: ModelFilter, admin_site: admin.AdminSite, ordering: str
) -> list[LiveLocksPageRow]:
    """The page's rows for display, sorted by how long they have been held when ``ordering`` asks.

    Holders link to their users for viewers who ``may_view`` users in this admin.
    """
    now = wall_now()
    user_model = get_user_model()
    links_users = may_view(user_model)

    def user_url(user_id: str) -> str | None:
        return admin_change_url(user_model, user_id, admin_site) if links_users else None

    shown = [
        LiveLocksPageRow(
            row,
            (now - row.lock.acquired_at).total_seconds() if row.lock.acquired_at else None,
            since(row.lock.acquired_at, now),
            activity(row),
            user_url(row.data.user_id) if row.data is not None and row.data.user_id else None,
            clock(row.lock.renewed_at, now) if row.state == "dead" and row.lock.renewed_at else "",
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
    """The "Held since" header's link: longest first, then shortest first."""
    return _link_with(params, "o", f"-{HELD_FOR}" if params.get("o", "") == HELD_FOR else HELD_FOR)


def _link_with(params: QueryDict, name: str, value: str | None) -> str:
    """This page's query with ``name`` set to ``value`` (None: removed), from the first page, as a whole page."""
    query = {key: params[key] for key in params if key not in (name, "cursor", "fragment")}
    if value is not None:
        query[name] = value
    return f"?{urlencode(query)}"
