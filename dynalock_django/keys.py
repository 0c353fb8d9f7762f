"""Lock keys for model rows: ``KEY_PREFIX + "app_label.model_name:pk"``.

With ``KEY_SCOPE`` (:mod:`.key_scope`), the current scope and ``|`` follow
``KEY_PREFIX`` in every key made here: ``KEY_PREFIX + "tenant_a|app_label.model_name:pk"``.

The label is the content type's natural key, so a key means the same row in
every database and environment. Proxy models and multi-table-inheritance
children lock their root model's key: they share its row. Primary key values
are percent-encoded, so any string pk is unambiguous; the parts of a
composite pk are joined by ``,`` (which is encoded inside a part).

A key must fit DynamoDB's 2048-byte partition key. The rare one that would
not (a long non-ASCII string pk: up to 12 bytes per character once encoded)
keeps a readable start of its encoded pk, cut there, followed by ``#`` and
the SHA-256 of the whole key it would have been: stable, collision-resistant,
and every key that fits is unchanged. ``#`` never occurs in an encoded pk, so
such a key is recognised; it names its model but not the row.

A run-once task's key (``dynalock_django.tasks``) reads like its call,
``KEY_PREFIX + "dotted.name(arg=value,...)"``, its arguments encoded so the key
holds no ``:`` (it reads back as a name), and is shortened the same way.

A counted lock's items (a semaphore's permits, a row's readers) are keyed by
the protocol: the set's key, then ``#permit-N`` or ``#reader-N``. They read
back as the key of their set (its row, or its name) plus the permit.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import models

from .conf import dynalock_settings
from .dynamodb import MAX_COUNTED_NAME_BYTES, MAX_PARTITION_KEY_BYTES, Described, split_permit_key
from .exceptions import InvalidLockRequest
from .key_scope import key_head, split_scope

_PK_SEPARATOR = ","
_DIGEST_SEPARATOR = "#"  # quote() always encodes it, so it cannot occur in an encoded pk
_DIGEST_LENGTH = 64  # SHA-256, in hex


@dataclass(frozen=True)
class ParsedKey:
    """What a lock key names: a model row (``model`` is None when not installed here) or a plain name.

    ``pk`` is the key's text (None for a shortened key, whose row cannot be
    told); ``object_pk`` is that pk as its model's field reads it, or None
    when the text is no valid pk of the model (a hand-written key, a bad
    UUID, an integer out of range), so no query is made for it.

    A counted lock's item reads as its set's key (``set_key``) does, with
    ``counted`` its kind ("semaphore", "read") and ``permit`` its index. ``scope``: the key's
    ``KEY_SCOPE`` ("" for none).
    """

    key: str
    label: str | None
    model: type[models.Model] | None
    pk: tuple[str, ...] | None
    name: str | None
    object_pk: Any = None
    counted: str | None = None
    permit: int | None = None
    set_key: str | None = None
    scope: str = ""


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
    return _fitting(f"{key_head()}{model_label(model)}:", encoded)


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
    return f"{key_head()}{name}"


def key_for_task(name: str, arguments: str, *, queued: bool = False, counted: bool = False) -> str:
    """The key of a run-once task called with ``arguments`` (ASCII, encoded by the caller): ``name(arguments)``.

    ``queued`` gives the key of its marker while a copy waits in a queue. A key
    over DynamoDB's limit is shortened as a row's is, so any arguments fit;
    ``counted``: the key of a semaphore (``limit=N``), shortened to leave room
    for its permits' suffix.
    """
    if not isinstance(name, str) or not name:
        raise InvalidLockRequest(f"A task's name must be a non-empty string, not {name!r}.")
    head = f"{key_head()}{'queued ' if queued else ''}{name}("
    return _fitting(head, f"{arguments})", MAX_COUNTED_NAME_BYTES if counted else MAX_PARTITION_KEY_BYTES)


def described(key: str, kind: str, model: type[models.Model] | None = None) -> Described:
    """How telemetry names the lock on ``key`` its caller takes: ``kind`` (object, name, task, queued task) and a
    row's ``model``; the key itself only with the setting ``TRACE_KEYS``. Passed with each acquire, and told by
    the caller, never read from the key's text: it runs at every acquire."""
    label = model_label(model) if model is not None else None
    return Described(kind, label, key if dynalock_settings.TRACE_KEYS else None)


def described_as_read(key: str) -> Described:
    """:func:`telemetry_attributes` as a :class:`Described`: for a lock read from the table (an operator's action)."""
    attributes = telemetry_attributes(key)
    return Described(attributes["dynalock.kind"], attributes.get("dynalock.model"), attributes.get("dynalock.key"))


def telemetry_attributes(key: str) -> dict[str, str]:
    """How telemetry describes ``key``: its kind (object, name, task, queued task; semaphore or read for a
    counted lock's item) and a row's model label.

    Read from the key's text and the app registry (a dictionary look-up): it
    runs at every acquire while OpenTelemetry is installed. A label reaches
    ``dynalock.model`` only when it is the label of an installed model that
    keys are made for (:func:`model_label`): any other text before a ``:`` (an
    e-mail address, a hostile key) is a name's, so no key text ever becomes an
    attribute's value. The key itself (a primary key, a task's arguments) only
    with the setting ``TRACE_KEYS``.
    """
    counted = split_permit_key(key)
    if counted is not None:  # a permit or a reader: its set's description (a row's model), of its own kind
        set_key, kind, _ = counted
        attributes = {**telemetry_attributes(set_key), "dynalock.kind": kind}
        if dynalock_settings.TRACE_KEYS:
            attributes["dynalock.key"] = key
        return attributes
    body = _body(key)
    label, separator, _ = body.partition(":")
    if separator and _is_installed_label(label):
        attributes = {"dynalock.kind": "object", "dynalock.model": label}
    elif body.startswith("queued ") and "(" in body:
        attributes = {"dynalock.kind": "queued task"}
    elif "(" in body:
        attributes = {"dynalock.kind": "task"}
    else:
        attributes = {"dynalock.kind": "name"}
    if dynalock_settings.TRACE_KEYS:
        attributes["dynalock.key"] = key
    return attributes


def _is_installed_label(label: str) -> bool:
    """Whether ``label`` is exactly what :func:`model_label` gives for an installed model."""
    app_label, dot, model_name = label.partition(".")
    if not dot:
        return False
    try:
        model = apps.get_model(app_label, model_name)
    except (LookupError, ValueError):
        return False
    return model_label(model) == label  # get_model ignores case, and a proxy's label is not its rows'


def parse_key(key: str) -> ParsedKey:
    """Read a key back: which model row it locks, or the name it was given (and the permit, for a counted lock's)."""
    counted = split_permit_key(key)
    if counted is not None:
        set_key, kind, permit = counted
        return dataclasses.replace(parse_key(set_key), key=key, counted=kind, permit=permit, set_key=set_key)
    split = split_scope(key)
    scope, body = split if split is not None else ("", key)
    label, separator, encoded = body.partition(":")
    app_label, dot, model_name = label.partition(".")
    if not separator or not dot or not encoded:
        return ParsedKey(key, None, None, None, body, scope=scope)
    try:
        model: type[models.Model] | None = apps.get_model(app_label, model_name)
    except (LookupError, ValueError):
        model = None
    if _is_shortened(encoded):
        return ParsedKey(key, label, model, None, None, scope=scope)
    pk = tuple(unquote(part) for part in encoded.split(_PK_SEPARATOR))
    object_pk = _object_pk(model, pk) if model is not None else None
    return ParsedKey(key, label, model, pk, None, object_pk, scope=scope)


def _body(key: str) -> str:
    """The key after ``KEY_PREFIX`` and its scope (the whole key when it is not under ``KEY_PREFIX``)."""
    split = split_scope(key)
    return key if split is None else split[1]


def _fitting(head: str, encoded: str, limit: int = MAX_PARTITION_KEY_BYTES) -> str:
    """``head + encoded``, or its shortened form when that is over ``limit`` bytes (DynamoDB's key limit)."""
    key = head + encoded
    if len(key.encode()) <= limit:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()
    room = max(0, limit - len(head.encode()) - len(_DIGEST_SEPARATOR) - _DIGEST_LENGTH)
    start = encoded[:room]  # encoded text is ASCII: one byte per character
    escape = start.rfind("%", len(start) - 2)
    if escape != -1:  # do not cut a %XX escape in two
        start = start[:escape]
    return f"{head}{start}{_DIGEST_SEPARATOR}{digest}"


def _is_shortened(encoded: str) -> bool:
    _, separator, digest = encoded.rpartition(_DIGEST_SEPARATOR)
    return bool(separator) and len(digest) == _DIGEST_LENGTH


def _pk_fields(model: type[models.Model]) -> Sequence[models.Field[Any, Any]]:
    pk_field = root_model(model)._meta.pk
    assert pk_field is not None
    return getattr(pk_field, "fields", None) or [pk_field]


def _python_pk(fields: Sequence[models.Field[Any, Any]], values: Sequence[Any]) -> tuple[Any, ...]:
    """The values as the pk fields store them; ValidationError (or TypeError) when they cannot be."""
    python = tuple(field.to_python(value) for field, value in zip(fields, values, strict=True))
    for field, value in zip(fields, python, strict=True):
        field.run_validators(value)  # an integer's range, a string's max_length
    return python


def _object_pk(model: type[models.Model], pk: tuple[str, ...]) -> Any:
    fields = _pk_fields(model)
    if len(pk) != len(fields):
        return None
    try:
        python = _python_pk(fields, pk)
    except (ValidationError, TypeError, ValueError):
        return None
    return python[0] if len(python) == 1 else python


def _pk_parts(model: type[models.Model], pk: Any) -> tuple[str, ...]:
    fields = _pk_fields(model)
    values = pk if len(fields) > 1 else (pk,)
    name = model.__name__
    if not isinstance(values, (tuple, list)) or len(values) != len(fields):
        raise InvalidLockRequest(
            f"{name} has a composite primary key of {len(fields)} fields; pass a tuple of {len(fields)} values."
        )
    if any(value is None for value in values):
        raise InvalidLockRequest(f"Cannot lock {name} with primary key {pk!r}: a part of it is None. Save it first.")
    try:
        return tuple(str(value) for value in _python_pk(fields, values))
    except Exception as error:  # to_python and validators raise ValidationError, but also TypeError for odd input
        raise InvalidLockRequest(f"{pk!r} is not a valid primary key for {name}: {error}") from error
