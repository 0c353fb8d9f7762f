"""Fencing for model rows: a write made under a lease is applied only if no newer lease wrote the row.

A lease cannot stop a holder that was paused past its lease from writing
late; the row can. Add a ``FencingTokenField`` to the model and write with
``fenced_save(instance, lease)``: the row keeps the token of the last lease
that wrote it, and a write under an older token raises StaleFencingToken and
changes nothing.

For a read-modify-write, claim the row *before* reading it, so a stale
holder's write cannot land between your read and your write::

    with lock_object(account) as lease:
        fenced_refresh(account, lease)   # stamps our token, then re-reads the row
        account.balance += 10
        fenced_save(account, lease, update_fields=["balance"])

Under ``lock_objects``, pass the group: each row is written under its own key's token::

    with lock_objects(source, target) as group:
        fenced_save(source, group)
        fenced_save(target, group)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import models, router, transaction
from django.db.models import F, Q

from .dynamodb import Lease, LeaseGroup
from .exceptions import ConfigurationError, InvalidLockRequest, LockLost, StaleFencingToken
from .keys import key_for_instance

if TYPE_CHECKING:  # django-stubs makes fields generic; Django's classes are not subscriptable
    _BigIntegerField = models.BigIntegerField[int | None, int | None]
else:
    _BigIntegerField = models.BigIntegerField


class FencingTokenField(_BigIntegerField):
    """The fencing token of the last lease that wrote the row (None: never written under a lease)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("null", True)
        kwargs.setdefault("blank", True)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)


def has_fencing_token(model: type[models.Model]) -> bool:
    return any(isinstance(field, FencingTokenField) for field in model._meta.concrete_fields)


def fencing_field(model: type[models.Model]) -> FencingTokenField:
    found = [field for field in model._meta.concrete_fields if isinstance(field, FencingTokenField)]
    if len(found) != 1:
        raise ConfigurationError(
            f"{model._meta.label} needs exactly one FencingTokenField for fenced writes (it has {len(found)}); "
            "add `fencing_token = FencingTokenField()` and run makemigrations."
        )
    return found[0]


def fenced_save(
    instance: models.Model, lease: Lease | LeaseGroup | int, *, update_fields: Iterable[str] | None = None
) -> None:
    """Save ``instance`` only if the row was last written under ``lease``'s token or an older one.

    ``lease`` may be a LeaseGroup (``lock_objects``): the token is that of ``instance``'s key in
    it. It may be the fencing token itself: a command run by ``manage.py dynalock run`` gets its
    runner's from :func:`~dynalock_django.supervised.fencing_token_from_environment`.

    A lease this process already knows is no longer held (lost, taken over, force-released,
    released) raises LockLost before any query. Otherwise one conditional UPDATE claims the row
    (it row-locks it until the transaction ends), then ``save()`` writes it, signals included. A
    row that does not exist yet is inserted with the token.
    """
    model = type(instance)
    field = fencing_field(model)
    token = fencing_token_for(instance, lease)
    using = instance._state.db or router.db_for_write(model, instance=instance)
    with transaction.atomic(using=using):
        # Whatever _state.adding says (Model(pk=...) is "adding" even for a stored row), ask the database.
        claimed = instance.pk is not None and _claim(model, instance.pk, field, token, using)
        setattr(instance, field.attname, token)
        if not claimed:
            if not instance._state.adding:
                raise _does_not_exist(model, instance.pk)
            instance.save(using=using, force_insert=True)
            return
        instance._state.adding = False
        fields = None if update_fields is None else {*update_fields, field.name}
        instance.save(using=using, update_fields=fields)


def fenced_refresh(instance: models.Model, lease: Lease | LeaseGroup | int) -> None:
    """Stamp the row with ``lease``'s token (a group's: its key's; or the token given), then reload it:
    no older holder can write it now. A lease known to be lost raises LockLost, as in :func:`fenced_save`."""
    claim_row(instance, fencing_token_for(instance, lease))
    instance.refresh_from_db(using=instance._state.db or router.db_for_write(type(instance), instance=instance))
    instance._state.adding = False  # it is a stored row now, as if loaded by a query


def claim_row(instance: models.Model, token: int) -> None:
    """Stamp ``instance``'s row with ``token`` unless a newer one is there (StaleFencingToken; DoesNotExist when
    there is no row), reading and writing nothing else: it stays row-locked until the transaction ends, so the
    ``save()`` that follows in it cannot be overtaken. For a token known good without a lease at hand."""
    model = type(instance)
    using = instance._state.db or router.db_for_write(model, instance=instance)
    if not _claim(model, instance.pk, fencing_field(model), token, using):
        raise _does_not_exist(model, instance.pk)


def claim_row_as_read(instance: models.Model, token_as_read: int | None) -> bool:
    """Row-lock ``instance``'s row until the transaction ends if it still carries ``token_as_read`` (None: never
    written under a lease); False, changing nothing, when a fenced write changed it since, or it is gone."""
    model = type(instance)
    field = fencing_field(model)
    using = instance._state.db or router.db_for_write(model, instance=instance)
    unchanged = (
        Q(**{f"{field.attname}__isnull": True}) if token_as_read is None else Q(**{field.attname: token_as_read})
    )
    # Setting the token to itself changes nothing, and takes the row's lock as the fenced claim does.
    return (
        model._base_manager.using(using).filter(unchanged, pk=instance.pk).update(**{field.attname: F(field.attname)})
        == 1
    )


def fencing_token_for(instance: models.Model, lease: Lease | LeaseGroup | int) -> int:
    """The token ``instance`` is written under: the lease's, that of the instance's key in a group, or the one given.

    A lease (or the group's member for ``instance``) this process already knows is gone raises
    LockLost (:func:`_known_lost`): the database would refuse only a write a newer holder got to
    first, and a lease lost without one (force-released, run out) must write nothing either.
    Asking costs no request.
    """
    if isinstance(lease, Lease):
        return _held_token(instance, lease)
    if isinstance(lease, LeaseGroup):
        key = key_for_instance(instance)
        if key not in lease:
            raise InvalidLockRequest(
                f"{instance._meta.label} {instance.pk!r} is not in this lock group (its key {key!r} is not one of the "
                f"group's {len(lease)}): add it to lock_objects(...) to write it under the group."
            )
        return _held_token(instance, lease[key])
    if isinstance(lease, int) and not isinstance(lease, bool):
        return lease  # a token alone: only the database can judge it
    raise TypeError(f"Fence writes with a Lease, a LeaseGroup or a fencing token (an int), not {type(lease).__name__}.")


def _held_token(instance: models.Model, lease: Lease) -> int:
    if _known_lost(lease):
        why = lease.lost_reason or ("its safe time ran out" if lease.state == "held" else lease.state)
        raise LockLost(
            f"{instance._meta.label} {instance.pk!r} was not written: the lock {lease.key!r} is no longer held "
            f"({why}). Nothing was written; acquire the lock again and re-read the row.",
            lease.lost_to,
        )
    return lease.fencing_token


def _known_lost(lease: Lease) -> bool:
    """What this process knows without a request: the lease was lost or released, or (renewed here) ran out.

    A detached handle (``LockClient.lease()``, ``keep_alive`` False) is renewed by
    its owner elsewhere: its clock here says nothing, so only its state counts.
    """
    return lease.state != "held" or (lease.keep_alive and not lease.is_held())


def _does_not_exist(model: type[models.Model], pk: Any) -> Exception:
    does_not_exist: type[Exception] = getattr(model, "DoesNotExist")  # noqa: B009 (typed as Model, not the subclass)
    return does_not_exist(f"{model._meta.label} {pk!r} does not exist (deleted while locked?).")


def _claim(model: type[models.Model], pk: Any, field: FencingTokenField, token: int, using: str) -> bool:
    """Put ``token`` on the row unless a newer one is there (StaleFencingToken); False if there is no row."""
    rows = model._base_manager.using(using).filter(pk=pk)
    not_newer = Q(**{f"{field.attname}__isnull": True}) | Q(**{f"{field.attname}__lte": token})
    if rows.filter(not_newer).update(**{field.attname: token}) == 1:
        return True
    stored = rows.values_list(field.attname, flat=True).first()
    if stored is None:  # a NULL token would have passed: there is no row
        return False
    raise StaleFencingToken(
        f"{model._meta.label} {pk!r} was written under fencing token {stored}, newer than this lease's {token}: "
        "the lease was lost (paused past it?) and another holder wrote the row. Nothing was written.",
        token=token,
        stored_token=stored,
    )
