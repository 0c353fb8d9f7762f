"""Lock keys for model rows: ``KEY_PREFIX + "app_label.model_name:pk"``.

The label is the content type's natural key, so a key means the same row in
every database and environment. Proxy models and multi-table-inheritance
children lock their root model's key: they share its row. Primary key values
are percent-encoded, so any string pk is unambiguous; the parts of a
composite pk are joined by ``,`` (which is encoded inside a part).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from django.apps import apps
from django.db import models

from .conf import dynalock_settings
from .exceptions import InvalidLockRequest

_PK_SEPARATOR = ","


@dataclass(frozen=True)
class ParsedKey:
    """What a lock key names: a model row (``model`` is None when not installed here) or a plain name."""

    key: str
    label: str | None
    model: type[models.Model] | None
    pk: tuple[str, ...] | None
    name: str | None

    @property
    def pk_value(self) -> str | tuple[str, ...] | None:
        """The pk as given to the ORM: a string, or a tuple for a composite pk."""
        if self.pk is None:
            return None
        return self.pk[0] if len(self.pk) == 1 else self.pk


def root_model(model: type[models.Model]) -> type[models.Model]:
    """The model whose row ``model``'s instances live in (proxies and MTI children share it)."""
    concrete = model._meta.concrete_model or model
    parents = concrete._meta.get_parent_list()
    return parents[-1] if parents else concrete


def model_label(model: type[models.Model]) -> str:
    return root_model(model)._meta.label_lower


def key_for_model(model: type[models.Model], pk: Any) -> str:
    """The key of the row ``pk`` of ``model``, without fetching it."""
    if not (isinstance(model, type) and issubclass(model, models.Model)):
        raise InvalidLockRequest(f"{model!r} is not a Django model class; pass the model, e.g. Customer.")
    values = _pk_parts(model, pk)
    encoded = _PK_SEPARATOR.join(quote(value, safe="") for value in values)
    return f"{dynalock_settings.KEY_PREFIX}{model_label(model)}:{encoded}"


def key_for_instance(instance: models.Model) -> str:
    """The key of a saved model instance."""
    if not isinstance(instance, models.Model):
        raise InvalidLockRequest(
            f"lock_object() needs a model instance, not {type(instance).__name__}; use lock_key(name) to lock by name."
        )
    if instance.pk is None:
        raise InvalidLockRequest(
            f"Cannot lock an unsaved {type(instance).__name__}: its primary key is None. Save it first."
        )
    return key_for_model(type(instance), instance.pk)


def key_for_name(name: str) -> str:
    """The key of a named lock (a job, a leader election)."""
    if not isinstance(name, str) or not name:
        raise InvalidLockRequest(f"A lock name must be a non-empty string, not {name!r}.")
    return f"{dynalock_settings.KEY_PREFIX}{name}"


def parse_key(key: str) -> ParsedKey:
    """Read a key back: which model row it locks, or the name it was given."""
    prefix = dynalock_settings.KEY_PREFIX
    body = key[len(prefix) :] if prefix and key.startswith(prefix) else key
    label, separator, encoded = body.partition(":")
    app_label, dot, model_name = label.partition(".")
    if not separator or not dot or not encoded:
        return ParsedKey(key, None, None, None, body)
    try:
        model: type[models.Model] | None = apps.get_model(app_label, model_name)
    except LookupError:
        model = None
    pk = tuple(unquote(part) for part in encoded.split(_PK_SEPARATOR))
    return ParsedKey(key, label, model, pk, None)


def _pk_parts(model: type[models.Model], pk: Any) -> tuple[str, ...]:
    pk_field = root_model(model)._meta.pk
    assert pk_field is not None
    fields: Sequence[models.Field[Any, Any]] = getattr(pk_field, "fields", None) or [pk_field]
    values = pk if len(fields) > 1 else (pk,)
    name = model.__name__
    if not isinstance(values, (tuple, list)) or len(values) != len(fields):
        raise InvalidLockRequest(
            f"{name} has a composite primary key of {len(fields)} fields; pass a tuple of {len(fields)} values."
        )
    if any(value is None for value in values):
        raise InvalidLockRequest(f"Cannot lock {name} with primary key {pk!r}: a part of it is None. Save it first.")
    try:
        return tuple(str(field.to_python(value)) for field, value in zip(fields, values, strict=True))
    except Exception as error:  # to_python raises ValidationError, but also TypeError for odd input
        raise InvalidLockRequest(f"{pk!r} is not a valid primary key for {name}: {error}") from error
