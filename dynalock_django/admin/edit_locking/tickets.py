"""A tab's ticket: which edit lock is the tab's, and how the ticket travels.

The tab holds an :class:`EditTicket`: its tab id and its grant's fencing
token. The lock's owner name is built on the server from the *authenticated*
user and the ticket's tab, so whatever ticket a request presents, it can only
ever renew, use or release a lock of the user who sends it.

The page posts its ticket with a save (``TICKET_FIELD``) and to the endpoints
(``ticket``). The page that replaces it in the same tab (a reload, a
save-and-continue) finds it in the handoff cookie and takes the lock over.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from django.http import HttpRequest, HttpResponse
from django.utils.encoding import escape_uri_path

TICKET_FIELD = "_dynalock_ticket"
# The ticket of a page that is being replaced by the next page of its tab (a reload, a
# save-and-continue), set just before it goes: the next page takes the lock over from it.
HANDOFF_COOKIE = "dynalock_handoff"
HANDOFF_SECONDS = 30

_TAB = "[A-Za-z0-9_-]{22}"  # secrets.token_urlsafe(16)
_TICKET = re.compile(rf"(?P<tab>{_TAB})\.(?P<token>[0-9]{{1,20}})")
_OWNER = re.compile(rf"django-user:(?P<user>[^/]*)/tab:(?P<tab>{_TAB})")


@dataclass(frozen=True)
class EditTicket:
    """What a tab presents to renew, save with or release its lock."""

    tab: str
    fencing_token: int

    def __str__(self) -> str:
        return f"{self.tab}.{self.fencing_token}"

    @classmethod
    def parse(cls, text: str | None) -> EditTicket | None:
        """The ticket written in ``text``, or None: it comes from a form field or a cookie."""
        match = _TICKET.fullmatch(text or "")
        return cls(match["tab"], int(match["token"])) if match else None


def django_user_id(user: Any) -> str:
    """The user, as lock items name them: the start of their tabs' owner names, their entry in a queue."""
    return f"django-user:{quote(str(user.pk), safe='')}"


def owner_name(user: Any, tab: str) -> str:
    return f"{django_user_id(user)}/tab:{tab}"


def is_users_tab(owner: str | None, user: Any) -> bool:
    """A lock with this owner name is held by one of ``user``'s tabs."""
    match = _OWNER.fullmatch(owner or "")
    return match is not None and unquote(match["user"]) == str(user.pk)


def handed_over(request: HttpRequest) -> EditTicket | None:
    """The ticket the page this tab showed just before left for this one."""
    return EditTicket.parse(request.COOKIES.get(HANDOFF_COOKIE))


def hand_over(response: HttpResponse, ticket: EditTicket, page_path: str, *, secure: bool) -> None:
    """Leave ``ticket`` for the next page of the tab at ``page_path`` (an escaped path)."""
    response.set_cookie(
        HANDOFF_COOKIE,
        str(ticket),
        max_age=HANDOFF_SECONDS,
        path=page_path,
        secure=secure,
        httponly=True,
        samesite="Strict",
    )


def forget_handoff(request: HttpRequest, response: HttpResponse) -> None:
    """The handoff cookie is used up once a page has read it (unless the response leaves a new one)."""
    if HANDOFF_COOKIE in request.COOKIES and HANDOFF_COOKIE not in response.cookies:
        response.delete_cookie(HANDOFF_COOKIE, path=escape_uri_path(request.path))
