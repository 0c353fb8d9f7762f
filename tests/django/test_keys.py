"""Keys: the content type's natural key and the pk, unambiguous and stable."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from django.conf import settings
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st

from dynalock_django.exceptions import InvalidLockRequest
from dynalock_django.keys import key_for_instance, key_for_model, key_for_name, parse_key

from .testapp.models import Account, AccountProxy, Membership, PremiumAccount, Tag, Ticket, Topic


def test_integer_pk_key_is_label_and_pk():
    assert key_for_model(Account, 42) == "testapp.account:42"
    assert key_for_model(Account, "42") == key_for_model(Account, 42)


def test_uuid_pk_is_normalised():
    value = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert key_for_model(Ticket, value) == key_for_model(Ticket, str(value).upper()) == f"testapp.ticket:{value}"


@pytest.mark.parametrize("slug", ["plain", "a:b", "a,b", "50%", "a/b c", "ünïcødé", ":,%"])
def test_any_string_pk_round_trips_unambiguously(slug):
    key = key_for_model(Tag, slug)
    assert key.count(":") == 1
    parsed = parse_key(key)
    assert parsed.model is Tag
    assert parsed.object_pk == slug


def test_composite_pk_joins_its_parts_and_round_trips():
    key = key_for_model(Membership, ("red,team", "alice"))
    assert key == "testapp.membership:red%2Cteam,alice"
    assert parse_key(key).object_pk == ("red,team", "alice")


@pytest.mark.django_db
def test_proxy_and_multi_table_children_lock_the_row_they_share():
    premium = PremiumAccount.objects.create(name="p")
    base = Account.objects.get(pk=premium.pk)
    proxy = AccountProxy.objects.get(pk=premium.pk)
    assert key_for_instance(premium) == key_for_instance(base) == key_for_instance(proxy)
    assert key_for_instance(base) == f"testapp.account:{base.pk}"


def test_unsaved_instance_is_refused_with_the_fix():
    with pytest.raises(InvalidLockRequest, match=r"unsaved Account.*Save it first"):
        key_for_instance(Account(name="new"))


def test_non_model_objects_are_refused():
    with pytest.raises(InvalidLockRequest, match=r"needs a model instance, not dict.*lock_key"):
        key_for_instance({"pk": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidLockRequest, match="not a Django model class"):
        key_for_model(dict, 1)  # type: ignore[arg-type]


def test_composite_pk_with_a_missing_part_or_wrong_shape_is_refused():
    with pytest.raises(InvalidLockRequest, match="a part of it is None"):
        key_for_instance(Membership(team="red", person=None))
    with pytest.raises(InvalidLockRequest, match="composite primary key of 2 fields"):
        key_for_model(Membership, "red")


def test_invalid_pk_values_are_refused():
    with pytest.raises(InvalidLockRequest, match="not a valid primary key for Ticket"):
        key_for_model(Ticket, "not-a-uuid")


def test_key_prefix_applies_to_every_key_and_is_stripped_when_parsing():
    with override_settings(DYNALOCK={**settings.DYNALOCK, "KEY_PREFIX": "crm/"}):
        assert key_for_model(Account, 1) == "crm/testapp.account:1"
        assert key_for_name("nightly") == "crm/nightly"
        assert parse_key("crm/testapp.account:1").model is Account
        assert parse_key("crm/nightly").name == "nightly"


def test_keys_of_unknown_models_and_plain_names_parse():
    assert parse_key("billing.invoice:7").model is None
    assert parse_key("billing.invoice:7").pk == ("7",)
    assert parse_key("nightly-billing").name == "nightly-billing"
    with pytest.raises(InvalidLockRequest):
        key_for_name("")


def test_integer_pks_out_of_the_fields_range_are_refused():
    with pytest.raises(InvalidLockRequest, match="not a valid primary key for Account"):
        key_for_model(Account, "99999999999999999999999")
    assert parse_key("testapp.account:99999999999999999999999").object_pk is None  # no query for it


@given(st.text(min_size=1, max_size=255))
def test_every_string_pk_maps_to_a_key_that_fits(pk):
    key = key_for_model(Topic, pk)
    assert len(key.encode()) <= 2048
    assert key == key_for_model(Topic, pk)  # stable
    parsed = parse_key(key)
    assert parsed.model is Topic
    if len(f"testapp.topic:{quote(pk, safe='')}".encode()) <= 2048:
        assert parsed.object_pk == pk  # keys that fit are as they always were
    else:
        assert parsed.pk is None  # shortened: the model is known, the row is not
        assert key.startswith(f"testapp.topic:{quote(pk, safe='')[:100]}")  # a readable start


def test_shortened_keys_differ_for_pks_that_differ_only_at_the_end():
    first, second = key_for_model(Topic, "😀" * 254 + "a"), key_for_model(Topic, "😀" * 254 + "b")
    assert first != second
    assert len(first.encode()) == len(second.encode()) <= 2048


# Counted locks' items: read back as their set's key, plus the permit


def test_a_rows_reader_reads_back_as_the_row_and_a_permit_as_its_name():
    reader = parse_key(key_for_model(Account, 7) + "#reader-3")
    assert (reader.model, reader.object_pk, reader.counted, reader.permit) == (Account, 7, "read", 3)
    assert reader.set_key == key_for_model(Account, 7)
    permit = parse_key("exports#permit-12")
    assert (permit.name, permit.counted, permit.permit, permit.set_key) == ("exports", "semaphore", 12, "exports")
    assert parse_key("exports#permit-x").counted is None  # not a permit's key: a name with a "#"
