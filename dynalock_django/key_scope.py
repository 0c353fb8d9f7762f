"""Keys scoped per tenant: ``DYNALOCK["KEY_SCOPE"]`` puts the current scope between ``KEY_PREFIX`` and a key.

With a scope, every key the Django layer makes (rows, tasks, semaphores,
leaders, beat) reads ``KEY_PREFIX + scope + "|" + key``: ``Order pk=5`` of two
tenants is two locks, and a listing of one scope never shows another's. The
setting is ``"auto"`` (the default: the current schema when django-tenants is
installed, no scope otherwise), ``None`` (no scope) or the dotted path of a
callable taking no argument that returns the scope ("" or None: no scope).

A scope is 1 to 63 letters, digits, ``_`` or ``-`` (a PostgreSQL schema name
fits), so the ``|`` after it tells a scoped key from an unscoped one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning
from django.utils.module_loading import import_string

from .conf import dynalock_settings
from .exceptions import ConfigurationError, InvalidLockRequest

SEPARATOR = "|"
AUTO = "auto"
TENANT_SCOPE = "dynalock_django.key_scope.tenant_schema"
_SCOPE = re.compile(r"[A-Za-z0-9_-]{1,63}")
_SCOPED_BODY = re.compile(rf"([A-Za-z0-9_-]{{1,63}}){re.escape(SEPARATOR)}")


def tenants_installed() -> bool:
    """Whether django-tenants is one of the installed apps (looked up, never imported)."""
    return apps.is_installed("django_tenants")


def tenant_schema() -> str:
    """django-tenants' current schema; "" (no scope) for its public schema or outside a tenant."""
    from django.db import connection  # the connection django-tenants switches between schemas

    schema = getattr(connection, "schema_name", None)
    public = getattr(settings, "PUBLIC_SCHEMA_NAME", "public")
    return "" if not schema or schema == public else str(schema)


def scope_path() -> str | None:
    """The dotted path of the callable giving the scope, or None when keys are not scoped."""
    configured = dynalock_settings.KEY_SCOPE
    if configured == AUTO:
        return TENANT_SCOPE if tenants_installed() else None
    return configured


@functools.lru_cache(maxsize=8)
def _callable(path: str) -> Callable[[], object]:
    try:
        found = import_string(path)
    except ImportError as error:
        raise ConfigurationError(f"DYNALOCK['KEY_SCOPE'] = {path!r} cannot be imported: {error}") from error
    if not callable(found):
        raise ConfigurationError(f"DYNALOCK['KEY_SCOPE'] = {path!r} is not callable: name a function.")
    return found  # type: ignore[no-any-return]


def current_scope() -> str:
    """The scope of the keys made now ("" for none)."""
    path = scope_path()
    if path is None:
        return ""
    value = _callable(path)()
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not _SCOPE.fullmatch(value):
        raise InvalidLockRequest(
            f"DYNALOCK['KEY_SCOPE'] ({path}) returned {value!r}: a scope is 1 to 63 letters, digits, _ or - "
            '("" or None for no scope). Make the callable return such a string.'
        )
    return value


def key_head(scope: str | None = None) -> str:
    """What every key of ``scope`` (the current one by default) starts with: ``KEY_PREFIX``, then the scope."""
    scope = current_scope() if scope is None else scope
    return f"{dynalock_settings.KEY_PREFIX}{scope}{SEPARATOR}" if scope else dynalock_settings.KEY_PREFIX


def split_scope(key: str) -> tuple[str, str] | None:
    """A key's scope ("" for none) and the rest after ``KEY_PREFIX`` and the scope; None if not under KEY_PREFIX."""
    prefix = dynalock_settings.KEY_PREFIX
    if not key.startswith(prefix):
        return None
    body = key[len(prefix) :]
    scoped = _SCOPED_BODY.match(body)
    return (scoped[1], body[scoped.end() :]) if scoped else ("", body)


def in_current_scope(key: str) -> bool:
    """Whether ``key`` is one of this project's keys (under ``KEY_PREFIX``) of the current scope.

    Without scoping every such key is; with it, an unscoped key only where the scope is none (django-tenants'
    public schema).
    """
    split = split_scope(key)
    return split is not None and (scope_path() is None or split[0] == current_scope())


def check_key_scope(path: object, *, explicit: bool) -> list[CheckMessage]:
    """System checks W006 and E032 of ``KEY_SCOPE`` (called by :func:`.checks.check_settings`)."""
    if path is None:
        if explicit and tenants_installed():
            return [
                Warning(
                    "DYNALOCK['KEY_SCOPE'] is None while django-tenants is installed: every tenant's Order pk=5 is "
                    "one lock, and staff of one tenant see another's holders.",
                    hint='Remove KEY_SCOPE (the default, "auto", scopes keys by schema) unless tenants share rows.',
                    id="dynalock.W006",
                )
            ]
        return []
    if path == AUTO:
        return []
    try:
        found = import_string(path) if isinstance(path, str) else None
    except ImportError:
        found = None
    if not callable(found):
        return [
            Error(
                f"DYNALOCK['KEY_SCOPE'] must be \"auto\", None or the dotted path of a callable, not {path!r}.",
                hint=f'For example "{TENANT_SCOPE}" (django-tenants\' schema), or a function of your own.',
                id="dynalock.E032",
            )
        ]
    return []
