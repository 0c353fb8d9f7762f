"""A change page's save while DynamoDB does not answer (``EDIT_DURING_OUTAGE``): still through the row's fence.

With no lock to check, such a save must not overwrite what was written under
a lease since the page was opened. So every editable page of a model with a
``FencingTokenField`` carries, signed (salted, bound to the object and the
user), the row's fencing token as the page showed it and the ticket the page
was given. A save during an outage is made only if:

- the page posts the ticket it was given: the row was last written under that
  ticket's token or an older one (the fence's own rule), and the row is
  stamped with it, as a fenced save would;
- otherwise (a page opened during the outage, or whose ticket changed since):
  the row still carries the token the page showed.

Each check is one conditional UPDATE that row-locks the row until the admin's
transaction ends, so the save that follows cannot be overtaken. A refusal is
a form error: the page comes back with what the user typed, saying why.

A model without a ``FencingTokenField`` has no fence: its saves during an
outage are made as they come, the last one standing (``dynalock.W003``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.core import signing
from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.http import HttpRequest
from django.utils.translation import gettext as _

from ...exceptions import StaleFencingToken
from ...fencing import claim_row, claim_row_as_read, fencing_field, has_fencing_token
from ...keys import key_for_instance
from .tickets import EditTicket

FENCE_FIELD = "_dynalock_fence"
_SALT = "dynalock_django.edit-page-fence"

logger = logging.getLogger("dynalock_django.admin")


@dataclass(frozen=True)
class Shown:
    """What a page showed: the row's fencing token (None: never written under a lease) and its ticket's token."""

    row_token: int | None
    ticket_token: int | None


def page_fence(obj: models.Model, user: Any, ticket: EditTicket | None) -> str | None:
    """The signed value an editable page of ``obj`` carries (None for a model without a FencingTokenField)."""
    model = type(obj)
    if not has_fencing_token(model):
        return None
    shown = {
        "key": key_for_instance(obj),
        "user": str(user.pk),
        "row": getattr(obj, fencing_field(model).attname),
        "ticket": None if ticket is None else ticket.fencing_token,
    }
    return signing.dumps(shown, salt=_SALT)


def shown_by(stamp: str | None, obj: models.Model, user: Any) -> Shown | None:
    """What the page that posted ``stamp`` showed of ``obj`` to ``user``; None if it is not a stamp made for them."""
    try:
        shown = signing.loads(stamp or "", salt=_SALT)
    except signing.BadSignature:
        return None
    if not isinstance(shown, dict) or shown.get("key") != key_for_instance(obj) or shown.get("user") != str(user.pk):
        return None
    row_token, ticket_token = shown.get("row"), shown.get("ticket")
    if not (_token_or_none(row_token) and _token_or_none(ticket_token)):
        return None
    return Shown(row_token, ticket_token)


def refused_outage_save(request: HttpRequest, obj: models.Model, ticket: EditTicket | None) -> str | None:
    """Claim ``obj``'s row for a save made during an outage; or why it may not be saved (nothing changed)."""
    if not has_fencing_token(type(obj)):
        return None  # no fence to go through: saved as it comes
    shown = shown_by(request.POST.get(FENCE_FIELD), obj, request.user)
    if shown is None:
        return _(
            "This page could not be checked for changes saved since it was opened. "
            "Reopen the page, then make your changes again."
        )
    try:
        if ticket is not None and shown.ticket_token == ticket.fencing_token:
            claim_row(obj, ticket.fencing_token)  # the page's own lock: the fence's rule
            return None
        if claim_row_as_read(obj, shown.row_token):
            return None
    except (StaleFencingToken, ObjectDoesNotExist):
        pass
    logger.info(
        "A save of %s %r by %r during an outage was refused: the row was saved since the page was opened.",
        obj._meta.label,
        obj.pk,
        request.user.get_username(),
    )
    return _(
        "Someone saved this record after you opened it. Reopen the page to see their changes, then make yours again."
    )


def _token_or_none(value: object) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))
