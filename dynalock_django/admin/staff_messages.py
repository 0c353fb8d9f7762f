"""DynamoDB failures as staff see them: what happened in general terms, and a reference.

botocore's messages can carry account ids, ARNs and endpoints, which are for
whoever runs the site, not for every staff user: they go to the log (logger
``dynalock_django.admin``), under a short reference that the page shows.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from ..dynamodb import DynalockError, DynamoDBError, DynamoDBUnavailable, TableNotFound, TableSchemaError, printable

logger = logging.getLogger("dynalock_django.admin")


def staff_message(error: DynalockError) -> str:
    """A message for staff about ``error``; a DynamoDB failure's details are logged under its reference."""
    if not isinstance(error, DynamoDBError):
        return str(error)  # our own words about the request (a bad cursor, an oversized key)
    reference = secrets.token_hex(4)
    logger.error("DynamoDB failed (reference %s): %s", reference, printable(error))
    if isinstance(error, TableNotFound | TableSchemaError):
        summary = str(error)  # written by us from the table's name: nothing of AWS's in it
    elif isinstance(error, DynamoDBUnavailable):
        summary = _("DynamoDB is unavailable (throttled, down or unreachable).")
    else:
        summary = _("DynamoDB refused the request.")
    return _("%(summary)s Reference: %(reference)s (the details are in the server's log).") % {
        "summary": summary,
        "reference": reference,
    }


def paused_message(error: DynalockError) -> str | None:
    """What staff are told while DynamoDB does not answer (``error`` a DynamoDBUnavailable, CircuitOpen too); None else.

    The same words on every page, whatever failed; the details go to the log (a warning: the
    breaker makes many pages fail alike while it lasts).
    """
    if not isinstance(error, DynamoDBUnavailable):
        return None
    logger.warning("DynamoDB is not answering: %s", printable(error))
    return _("Editing is paused: the lock service is not answering. Try again in a minute.")


def unavailable_response(request: HttpRequest, context: dict[str, Any], error: DynamoDBError) -> HttpResponse:
    """503, with what staff may know about ``error``, on an admin page (``context``: the site's and ``opts``)."""
    page = {**context, "title": _("Locks are unavailable"), "message": paused_message(error) or staff_message(error)}
    return TemplateResponse(request, "admin/dynalock_django/unavailable.html", page, status=503)
