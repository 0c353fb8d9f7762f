"""One test per system check id.

The settings checks make no request: those tests get no table. The deploy checks describe one.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from django.core import checks
from django.core.management import call_command
from django.test import override_settings

from dynalock_django import client as client_module
from dynalock_django.checks import check_settings, check_table
from dynalock_django.conf import MAX_PAGE_SECONDS
from dynalock_django.dynamodb import LockClient

from ..dynamodb_support import SHORT_LEASE_SETTINGS, create_bare_table, make_dynamodb, unique
from .admin_support import PATIENT

pytestmark = pytest.mark.stores

# A server's patience: these checks are about the table, not about time (a loaded machine answers late).
PATIENT_CLIENT = {"read_timeout": 10, "connect_timeout": 1}


@pytest.fixture
def dynalock(dynalock):
    """The suite's table on the local endpoint, with time-outs a loaded machine meets."""
    patient = {**dynalock, **PATIENT}
    with override_settings(DYNALOCK=patient):
        yield patient


@pytest.fixture
def configured():
    """DYNALOCK as a project has it, with the suite's short leases."""
    return {"TABLE_NAME": "locks", **SHORT_LEASE_SETTINGS}


def ids_for(configured, **changes):
    with override_settings(DYNALOCK={**configured, **changes}):
        return [message.id for message in check_settings()]


def test_settings_with_the_suites_short_leases_pass_every_check(configured):
    assert ids_for(configured) == []


def test_idle_tabs_may_keep_their_locks(configured):
    assert ids_for(configured, EDIT_IDLE_TIMEOUT=None) == []
    assert ids_for(configured, EDIT_IDLE_TIMEOUT=5) == []


def test_e001_dynalock_that_is_not_a_dict():
    with override_settings(DYNALOCK=["TABLE_NAME"]):
        [message] = check_settings()
    assert message.id == "dynalock.E001"


def test_e002_unknown_key_suggests_the_close_one(configured):
    with override_settings(DYNALOCK={**configured, "LEASE_DURATON": 5}):
        [message] = check_settings()
    assert message.id == "dynalock.E002"
    assert "'LEASE_DURATION'" in message.hint


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"TABLE_NAME": "x"}, "dynalock.E003"),
        ({"TABLE_NAME": "has space"}, "dynalock.E003"),
        ({"LEASE_DURATION": "20"}, "dynalock.E004"),
        ({"LEASE_DURATION": -1}, "dynalock.E004"),
        ({"HEARTBEAT_PERIOD": 0}, "dynalock.E005"),
        ({"LEASE_DURATION": 10, "HEARTBEAT_PERIOD": 5}, "dynalock.E006"),
        ({"REFRESH_PERIOD": None}, "dynalock.E007"),
        ({"BOTO_CONFIG": {"retries": 3, "no_such_option": 1}}, "dynalock.E008"),
        ({"BOTO_CONFIG": {"retries": 3}}, "dynalock.E008"),
        ({"KEY_PREFIX": 7}, "dynalock.E009"),
        ({"CONTENTION_STATUS": 200}, "dynalock.E010"),
        ({"CONTENTION_STATUS": "423"}, "dynalock.E010"),
        ({"ENDPOINT_URL": "localhost:8000"}, "dynalock.E011"),
        ({"OWNER_NAME": ""}, "dynalock.E012"),
        ({"DELETE_ON_RELEASE": "yes"}, "dynalock.E013"),
        ({"EDIT_LEASE_DURATION": 0}, "dynalock.E014"),
        ({"EDIT_IDLE_TIMEOUT": 0}, "dynalock.E018"),
        ({"EDIT_IDLE_TIMEOUT": "15 min"}, "dynalock.E018"),
        ({"ADMIN_SHOWS_ALL_KEYS": "yes"}, "dynalock.E015"),
        ({"SHOW_HOLDER_TO_ANONYMOUS": 1}, "dynalock.E016"),
        ({"TRACE_KEYS": "no"}, "dynalock.E028"),
        ({"BEAT_SCHEDULER": "PersistentScheduler"}, "dynalock.E030"),  # a class name alone: no module
        ({"BEAT_SCHEDULER": None}, "dynalock.E030"),
        ({"SHARED_LOCK_MODELS": "testapp.Account"}, "dynalock.E031"),  # a string, not a list of them
        ({"SHARED_LOCK_MODELS": ["testapp.Acount"]}, "dynalock.E031"),
        ({"SHARED_LOCK_MODELS": ["Account"]}, "dynalock.E031"),  # no app label
        ({"SHARED_LOCK_MODELS": [None]}, "dynalock.E031"),
        ({"BOTO_CONFIG": {}}, "dynalock.W001"),  # botocore's defaults: 60 s time-outs x 4 attempts
        ({"DELETE_ON_RELEASE": True}, "dynalock.W002"),
        ({"BREAKER_THRESHOLD": 0}, "dynalock.E019"),
        ({"BREAKER_THRESHOLD": "3"}, "dynalock.E019"),
        ({"BREAKER_COOL_DOWN": 0}, "dynalock.E019"),
        ({"EDIT_DURING_OUTAGE": "yes"}, "dynalock.E029"),
        ({"EDIT_DURING_OUTAGE": True}, "dynalock.W005"),
    ],
)
def test_each_bad_value_has_its_id_and_a_hint(configured, changes, expected):
    with override_settings(DYNALOCK={**configured, **changes}):
        messages = check_settings()
    assert [m.id for m in messages] == [expected]
    assert messages[0].hint


@pytest.mark.parametrize("bad", [-1, -0.001, "1.0", True, math.nan, math.inf, [1]])
def test_e017_max_clock_skew_must_be_none_or_a_finite_number_of_seconds(configured, bad):
    with override_settings(DYNALOCK={**configured, "MAX_CLOCK_SKEW": bad}):
        [message] = check_settings()
    assert message.id == "dynalock.E017"
    assert "MAX_CLOCK_SKEW" in message.msg
    assert "None" in message.hint


@pytest.mark.parametrize(("name", "check_id"), [("EDIT_LEASE_DURATION", "E014"), ("EDIT_IDLE_TIMEOUT", "E018")])
@pytest.mark.parametrize("bad", [math.inf, math.nan, MAX_PAGE_SECONDS + 1, 2**31 / 1000])
def test_e014_e018_a_change_pages_durations_must_be_finite_and_within_a_browsers_timer(configured, name, check_id, bad):
    with override_settings(DYNALOCK={**configured, name: bad}):
        [message] = check_settings()
    assert message.id == f"dynalock.{check_id}"
    assert name in message.msg
    assert "24 days" in message.msg


@pytest.mark.parametrize("name", ["EDIT_LEASE_DURATION", "EDIT_IDLE_TIMEOUT"])
def test_a_change_pages_durations_up_to_24_days_pass(configured, name):
    assert ids_for(configured, **{name: MAX_PAGE_SECONDS}) == []


@pytest.mark.parametrize("good", [None, 0, 0.5, 2])
def test_max_clock_skew_none_zero_or_seconds_pass(configured, good):
    assert ids_for(configured, MAX_CLOCK_SKEW=good) == []


def test_the_e006_hint_says_what_to_change(configured):
    with override_settings(DYNALOCK={**configured, "LEASE_DURATION": 10, "HEARTBEAT_PERIOD": 5}):
        [message] = check_settings()
    assert "above 10" in message.hint
    assert "below 5" in message.hint


@pytest.mark.django_db  # Django 6's check asks the database whether it has JSON fields (the app's BeatSends)
def test_plain_check_never_calls_dynamodb(configured):
    client_module.close_client()
    with override_settings(DYNALOCK={**configured, "ENDPOINT_URL": "http://127.0.0.1:9"}):
        call_command("check")
        assert client_module._client is None


@pytest.mark.uses_dynalock
def test_deploy_check_passes_for_a_good_table():
    assert check_table() == []
    assert checks.run_checks(include_deployment_checks=True, tags=["dynalock"]) == []


@pytest.mark.uses_dynalock
def test_e020_missing_table_says_run_createtable(dynalock):
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": "no-such-table"}):
        [message] = check_table()
    assert message.id == "dynalock.E020"
    assert "dynalock createtable" in message.hint


@pytest.mark.uses_dynalock
def test_e021_a_table_with_another_key_schema(dynalock):
    name = unique("wrong-schema")
    make_dynamodb(dynalock["ENDPOINT_URL"], **PATIENT_CLIENT).create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
        BillingMode="PAY_PER_REQUEST",
    )
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": name}):
        ids = [message.id for message in check_table()]
    assert "dynalock.E021" in ids


def test_e022_an_unreachable_endpoint(configured):
    with override_settings(DYNALOCK={**configured, "ENDPOINT_URL": "http://127.0.0.1:9"}):
        [message] = check_table()
    assert message.id == "dynalock.E022"


@pytest.mark.uses_dynalock
def test_w020_a_table_without_ttl_is_the_only_finding(dynalock):
    name = unique("no-ttl")
    LockClient(make_dynamodb(dynalock["ENDPOINT_URL"], **PATIENT_CLIENT), name, ttl_attribute=None).create_table()
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": name}):
        ids = [message.id for message in check_table()]
    assert ids == ["dynalock.W020"]


@pytest.mark.uses_dynalock
def test_w021_a_table_without_the_live_locks_index(dynalock):
    name = unique("no-index")
    dynamodb = make_dynamodb(dynalock["ENDPOINT_URL"], **PATIENT_CLIENT)
    create_bare_table(dynamodb, name)
    dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": name}):
        [message] = check_table()
    assert message.id == "dynalock.W021"
    assert "is missing" in message.msg
    assert "dynalock createindex" in message.hint


@pytest.mark.uses_dynalock
@pytest.mark.parametrize(("consistency", "warned"), [(None, True), ("EVENTUAL", True), ("STRONG", False)])
def test_w022_an_eventually_consistent_global_table(dynalock, monkeypatch, consistency, warned):
    # No local store has global tables: the real description, with what DescribeTable shows for one.
    described = LockClient.describe_table

    def as_global_table(client):
        real = described(client)
        return dataclasses.replace(
            real, replica_regions=("us-east-1", "eu-west-1"), multi_region_consistency=consistency
        )

    monkeypatch.setattr(LockClient, "describe_table", as_global_table)
    with override_settings(DYNALOCK=dynalock):
        messages = [message for message in check_table() if message.id == "dynalock.W022"]
    assert bool(messages) is warned
    if warned:
        assert "us-east-1, eu-west-1" in messages[0].msg
        assert "MRSC" in messages[0].hint


def test_deploy_check_is_skipped_while_the_settings_are_wrong(configured):
    with override_settings(DYNALOCK={**configured, "TABLE_NAME": "x"}):
        assert check_table() == []


@pytest.mark.parametrize("bad", [0, -1, 65, 2.0, "8", True, None])
def test_e024_renewal_workers_must_be_a_whole_number_from_1_to_64(configured, bad):
    with override_settings(DYNALOCK={**configured, "RENEWAL_WORKERS": bad}):
        [message] = check_settings()
    assert message.id == "dynalock.E024"
    assert "RENEWAL_WORKERS" in message.msg
    assert "max_pool_connections" in message.hint


def test_renewal_workers_reach_the_process_client(configured):
    from dynalock_django.client import close_client, get_client

    with override_settings(DYNALOCK={**configured, "RENEWAL_WORKERS": 3}):
        assert check_settings() == []
        assert get_client().renewal_workers == 3
        close_client()
