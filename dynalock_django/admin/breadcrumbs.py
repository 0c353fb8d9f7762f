"""The breadcrumbs of the package's own admin pages, in the markup of the running Django's admin.

Django 6.0 turned the admin's ``<div class="breadcrumbs">`` into an
``<ol class="breadcrumbs">`` of items and styles only that; 5.2 styles only
the ``div``. A page that cannot extend a Django template with the right
trail (the confirmations, the unavailable page) gives its crumbs here, and
``admin/dynalock_django/breadcrumbs.html`` writes them as this Django does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import django
from django.contrib import admin
from django.db.models.options import Options
from django.urls import reverse
from django.utils.text import capfirst
from django.utils.translation import gettext as _

# The first Django whose admin writes breadcrumbs as an ordered list.
LIST_BREADCRUMBS_SINCE = (6, 0)


@dataclass(frozen=True)
class Crumb:
    label: str
    url: str | None = None  # None: the page itself, the last crumb


def breadcrumbs(admin_site: admin.AdminSite, opts: Options[Any] | None, *trail: Crumb) -> dict[str, Any]:
    """The template context for Home, then ``opts``'s app and changelist (when given), then ``trail``."""
    crumbs = [Crumb(_("Home"), reverse(f"{admin_site.name}:index"))]
    if opts is not None:
        crumbs.append(
            Crumb(str(opts.app_config.verbose_name), reverse(f"{admin_site.name}:app_list", args=[opts.app_label]))
        )
        changelist = f"{admin_site.name}:{opts.app_label}_{opts.model_name}_changelist"
        crumbs.append(Crumb(capfirst(str(opts.verbose_name_plural)), reverse(changelist)))
    return {
        "dynalock_breadcrumbs": [*crumbs, *trail],
        "dynalock_breadcrumbs_as_list": django.VERSION[:2] >= LIST_BREADCRUMBS_SINCE,
    }
