"""DynamoDB failures as staff see them: what happened in general terms, what to do, and a reference.

botocore's messages, and ours about the table (its name, how to create it),
are for whoever runs the site, not for every staff user: they go to the log
(logger ``dynalock_django.admin``) under a short reference that the page
shows, so that the two can be matched.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from ..dynamodb import DynalockError, DynamoDBError, DynamoDBUnavailable, TableNotFound, TableSchemaError, printable
from .breadcrumbs import Crumb, breadcrumbs

logger = logging.getLogger("dynalock_django.admin")


def staff_message(error: DynalockError) -> str:
    """Sentences for staff about ``error``; a DynamoDB failure's details are logged under the reference shown."""
    if not isinstance(error, DynamoDBError):
        return str(error)  # our own words about the request (a bad cursor, an oversized key)
    reference = secrets.token_hex(4)
    logger.error("DynamoDB failed (reference %s): %s", reference, printable(error))
    if isinstance(error, TableNotFound | TableSchemaError):
        return _(
            "The lock table is missing or not set up for locks. Tell whoever runs this site, quoting reference "
            "%(reference)s."
        ) % {"reference": reference}
    if isinstance(error, DynamoDBUnavailable):
        return _(
            "The lock service cannot be reached. Try again in a moment; if it lasts, tell whoever runs this site, "
            "quoting reference %(reference)s."
        ) % {"reference": reference}
    return _("The lock service refused the request. Tell whoever runs this site, quoting reference %(reference)s.") % {
        "reference": reference
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


def unavailable_response(
    request: HttpRequest, model_admin: admin.ModelAdmin[Any], error: DynamoDBError
) -> HttpResponse:
    """503: an admin page of ``model_admin``'s saying what staff may know about ``error``."""
    title = _("Locks are unavailable")
    site, opts = model_admin.admin_site, model_admin.opts
    page = {
        **site.each_context(request),
        **breadcrumbs(site, opts, Crumb(title)),
        "opts": opts,
        "title": title,
        "message": paused_message(error) or staff_message(error),
    }
    return TemplateResponse(request, "admin/dynalock_django/unavailable.html", page, status=503)
