"""The answer to a request for a locked object: ``CONTENTION_STATUS`` (423 Locked) that says when to try again.

``@requires_lock`` and ``LockErrorsMiddleware`` answer with it. JSON clients
get JSON; others the ``dynalock_django/locked.html`` template (documented in
docs/django/views.md, which projects override). ``Retry-After`` is the
holder's remaining lease, by its last renewal, and the page says the same in
words. Who holds the lock is told as the admin tells it
(:func:`.live_lock_rows.holder_label`): a user's name to signed-in users,
the host and process of code only to those who may see the live-locks page
(``view_lock``); to nobody when the request is anonymous, unless
``SHOW_HOLDER_TO_ANONYMOUS``. A POST keeps what was typed: the page offers
to send the form's fields again, with a fresh CSRF token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import models
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch
from django.utils import timezone
from django.utils.http import escape_leading_slashes, url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from .client import wall_now
from .conf import dynalock_settings
from .dynamodb import LockInfo
from .live_lock_rows import holder_label
from .models import VIEW_LOCK_PERMISSION
from .payload import LockData
from .sensitive_fields import ALL, Sensitive, echoable, union

TEMPLATE = "dynalock_django/locked.html"
# A day: an item can claim a lease of millions of years, and no client should be told to wait that long.
MAX_RETRY_AFTER = 24 * 3600
# What a lock's purpose means, in staff words (the admin's edit locks say "edit").
ACTIVITIES = {"edit": gettext_lazy("editing it")}
# The form's own CSRF field: the page renders a fresh one.
CSRF_FIELD = "csrfmiddlewaretoken"
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
NO_RESUBMISSION: dict[str, Any] = {
    "resubmit": False,
    "resubmit_fields": [],
    "files_dropped": False,
    "secrets_dropped": False,
}


@dataclass(frozen=True)
class Holder:
    """Who holds the lock, as much as the request may be told."""

    name: str | None  # None: not told
    purpose: str  # as the code gave it; "" when not told
    since: datetime | None  # on the holder's wall clock, in the current time zone; None past the calendar

    @property
    def activity(self) -> str:
        """What the holder is doing, in words: "editing it", else "working on it (<purpose>)"."""
        if not self.purpose:
            return ""
        if self.purpose in ACTIVITIES:
            return str(ACTIVITIES[self.purpose])
        return _("working on it (%(purpose)s)") % {"purpose": self.purpose}


def locked_response(
    request: HttpRequest,
    holder: LockInfo | None,
    status: int | None = None,
    *,
    instance: models.Model | None = None,
    sensitive: Sensitive = frozenset(),
) -> HttpResponse:
    """The answer to a request for a locked object: who holds it (to those who may know) and when to retry.

    ``instance`` is the locked object, when known: its page is the way back when the
    request came from no page of this site. ``sensitive``: the fields of a POST the view
    marks, besides the request's ``sensitive_post_parameters`` (:mod:`.sensitive_fields`).
    """
    now = wall_now()
    retry_after = retry_seconds(holder, now)
    told = told_holder(request, holder)
    status = status or dynalock_settings.CONTENTION_STATUS
    response: HttpResponse
    if wants_json(request):
        since = holder.acquired_at.isoformat() if holder and holder.acquired_at else None
        body = {"error": "locked", "holder": told.name, "purpose": told.purpose, "since": since}
        response = JsonResponse({**body, "retry_after": retry_after}, status=status)
    else:
        context = {
            "holder": told.name,
            "purpose": told.purpose,
            "activity": told.activity,
            "since": told.since,
            "retry_after": retry_after,
            "retry_at": timezone.localtime(now + timedelta(seconds=retry_after)),
            "retry_in": duration_words(retry_after),
            "object": instance,
            "back_url": back_url(request, instance),
            # A path of "//host/..." (a catch-all route) links to another site: escaped as Django's redirects do.
            "retry_url": escape_leading_slashes(request.get_full_path()) if request.method in ("GET", "HEAD") else None,
            **resubmission(request, sensitive),
        }
        response = TemplateResponse(request, TEMPLATE, context, status=status)
    response["Retry-After"] = str(retry_after)
    return response


def retry_seconds(holder: LockInfo | None, now: datetime) -> int:
    """Seconds until the holder's lease runs out if it is not renewed: from its last renewal, by its clock.

    Never more than its lease (a clock ahead of ours) nor a day; at least a second.
    """
    if holder is None:
        return 1
    lease = holder.lease_duration if math.isfinite(holder.lease_duration) else float(MAX_RETRY_AFTER)
    last = holder.renewed_at or holder.acquired_at
    remaining = lease if last is None else min(lease, lease - (now - last).total_seconds())
    return max(1, min(math.ceil(remaining), MAX_RETRY_AFTER))


def told_holder(request: HttpRequest, holder: LockInfo | None) -> Holder:
    """The holder as the request may be told it: as the admin tells it, and nothing to anonymous requests."""
    if holder is None:
        return Holder(None, "", None)
    since = _local(holder.acquired_at)
    user = getattr(request, "user", None)
    public = dynalock_settings.SHOW_HOLDER_TO_ANONYMOUS
    if not public and not (user is not None and user.is_authenticated):
        return Holder(None, "", since)
    shows_hosts = public or bool(user is not None and user.has_perm(VIEW_LOCK_PERMISSION))
    data = LockData.from_bytes(holder.data)
    named = shows_hosts or bool(data is not None and data.username)
    if not named:  # code, and the request may not see hosts: who and why stay untold
        return Holder(None, "", since)
    return Holder(holder_label(holder, shows_hosts=shows_hosts), data.purpose if data else "", since)


def duration_words(seconds: int) -> str:
    """How long to wait, for people: "45 seconds", "3 minutes", "2 hours" (rounded up: never sooner than said)."""
    if seconds < 60:
        return ngettext("%(count)d second", "%(count)d seconds", seconds) % {"count": seconds}
    minutes = math.ceil(seconds / 60)
    if minutes < 90:
        return ngettext("%(count)d minute", "%(count)d minutes", minutes) % {"count": minutes}
    hours = math.ceil(seconds / 3600)
    return ngettext("%(count)d hour", "%(count)d hours", hours) % {"count": hours}


def back_url(request: HttpRequest, instance: models.Model | None) -> str | None:
    """The page the request came from, when it is a page of this site; else the object's own page, if it has one."""
    referer = request.headers.get("Referer", "")
    if referer and url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return referer
    absolute_url = getattr(instance, "get_absolute_url", None)
    try:
        return str(absolute_url()) if callable(absolute_url) else None
    except NoReverseMatch:  # its URL is not in this URLconf: no way back beats a 500 in place of the 423
        return None


def resubmission(request: HttpRequest, sensitive: Sensitive = frozenset()) -> dict[str, Any]:
    """What a form's POST needs to be sent again: its fields (not its files, which a page cannot hold).

    Only for a signed-in user's POST that passed Django's CSRF check: the page's fresh token would
    otherwise turn a cross-site POST (or one to a ``csrf_exempt`` view) into a same-site one, a click
    away. Secret-looking fields (passwords, keys, tokens, card numbers), ``sensitive`` and
    Django's ``sensitive_post_parameters`` are left out, to be typed again.
    """
    if request.method != "POST" or request.content_type not in FORM_TYPES:
        return NO_RESUBMISSION
    user = getattr(request, "user", None)
    if not getattr(request, "csrf_processing_done", False) or user is None or not user.is_authenticated:
        return NO_RESUBMISSION
    sensitive = union(sensitive, getattr(request, "sensitive_post_parameters", None))
    if sensitive == ALL:
        return NO_RESUBMISSION
    try:
        typed = [(name, value) for name, values in request.POST.lists() if name != CSRF_FIELD for value in values]
        files_dropped = bool(request.FILES)
    except (RawPostDataException, RequestDataTooBig, SuspiciousOperation):  # read as a stream, or refused
        return NO_RESUBMISSION
    fields = [(name, value) for name, value in typed if echoable(name, sensitive)]
    return {
        "resubmit": True,
        "resubmit_fields": fields,
        "files_dropped": files_dropped,
        "secrets_dropped": len(fields) < len(typed),
    }


def _local(moment: datetime | None) -> datetime | None:
    """``moment`` in the current time zone; None past the calendar's end there (an item's year 9999)."""
    if moment is None:
        return None
    try:
        return timezone.localtime(moment)
    except (OverflowError, OSError, ValueError):
        return None


def wants_json(request: HttpRequest) -> bool:
    """A JSON client: it sent JSON, or it accepts JSON and not HTML."""
    accept = request.headers.get("Accept", "")
    return request.content_type == "application/json" or ("application/json" in accept and "text/html" not in accept)
