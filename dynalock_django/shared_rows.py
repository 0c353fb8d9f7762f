"""Which rows may have readers (``lock_object(row, shared=True)``): declared by model, and with room for their keys."""

from __future__ import annotations

import functools

from django.apps import apps
from django.db import models

from . import keys
from .conf import dynalock_settings
from .dynamodb import MAX_COUNTED_NAME_BYTES


def may_have_readers(key: str) -> bool:
    """Whether the keys of ``key``'s readers fit DynamoDB's: else the row can have no reader."""
    return len(key.encode()) <= MAX_COUNTED_NAME_BYTES


def readers_declared(model: type[models.Model]) -> bool:
    """Whether ``model``'s rows may have readers (``DYNALOCK["SHARED_LOCK_MODELS"]``): only then do writers look."""
    return keys.model_label(model) in shared_lock_labels(dynalock_settings.SHARED_LOCK_MODELS)


@functools.lru_cache(maxsize=8)
def shared_lock_labels(declared: tuple[str, ...]) -> frozenset[str]:
    """The labels of the rows ``declared`` names (a proxy's or a child's: its root's); unknown ones are checks' E031."""
    labels = set()
    for label in declared:
        try:
            labels.add(keys.model_label(apps.get_model(label)))
        except (LookupError, ValueError):
            continue
    return frozenset(labels)
