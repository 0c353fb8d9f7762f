"""The live-locks page and `dynalock list` read live locks from the index; other clients' locks by a full scan."""

from __future__ import annotations

import logging
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from dynalock_django import lock_key
from dynalock_django.client import get_client

from ...dynamodb_support import create_bare_table, unique
from ...java_client import JavaLockClient
from ..admin_support import LIVE_LOCKS, logged_in

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


class ScanRecorder:
    """The parameters of every Scan the process's client sends."""

    def __init__(self) -> None:
        self.scans: list[dict] = []
        get_client().dynamodb.meta.events.register("provide-client-params.dynamodb.Scan", self._record)

    def _record(self, params: dict, **_: object) -> None:
        self.scans.append(dict(params))

    @property
    def indexes(self) -> list[str | None]:
        return [scan.get("IndexName") for scan in self.scans]


@pytest.fixture
def viewer(make_staff):
    return make_staff("vera", "view_lock")


def dynalock_list(*args):
    out = StringIO()
    call_command("dynalock", "list", *args, stdout=out)
    return out.getvalue()


def test_a_live_locks_page_is_one_scan_of_the_index(viewer):
    client = logged_in(viewer)
    lease = lock_key("nightly").acquire()
    recorder = ScanRecorder()
    page = client.get(LIVE_LOCKS)
    assert recorder.indexes == ["liveLocks"]
    assert page.context["page"].from_index
    assert "nightly" in page.content.decode()
    lease.release()
    assert "nightly" not in client.get(LIVE_LOCKS).content.decode()
    assert recorder.indexes == ["liveLocks", "liveLocks"]


def test_released_locks_and_other_clients_locks_cost_a_scan_of_the_table(viewer, dynalock):
    key = unique("java")
    JavaLockClient(get_client().dynamodb, dynalock["TABLE_NAME"]).acquire_new(key)
    client = logged_in(viewer)
    recorder = ScanRecorder()
    assert key not in client.get(LIVE_LOCKS).content.decode()  # the Java client keeps no live mark
    found = client.get(LIVE_LOCKS, {"other_clients": "1"})
    assert key in found.content.decode()
    assert not found.context["page"].from_index
    client.get(LIVE_LOCKS, {"status": "all"})
    assert recorder.indexes == ["liveLocks", None, None]


def test_the_list_command_reads_the_index_and_scans_on_request(dynalock):
    java_key = unique("java")
    JavaLockClient(get_client().dynamodb, dynalock["TABLE_NAME"]).acquire_new(java_key)
    lease = lock_key("held-job").acquire()
    lock_key("done-job").acquire().release()
    recorder = ScanRecorder()
    listed = dynalock_list()
    assert "held-job" in listed
    assert "done-job" not in listed
    assert java_key not in listed
    assert recorder.indexes == ["liveLocks"]
    other_clients = dynalock_list("--other-clients")
    assert "held-job" in other_clients
    assert java_key in other_clients
    assert "done-job" not in other_clients
    assert "done-job" in dynalock_list("--all")
    assert recorder.indexes == ["liveLocks", None, None]
    lease.release()
    assert "held-job" not in dynalock_list()


def test_without_the_index_the_live_locks_page_and_the_command_scan_and_say_so(viewer, dynalock, caplog):
    name = unique("no-index")
    create_bare_table(get_client().dynamodb, name)
    with override_settings(DYNALOCK={**dynalock, "TABLE_NAME": name}):
        lease = lock_key("held-job").acquire()
        described = StringIO()
        call_command("dynalock", "describe", stdout=described)
        assert "none (listings scan the table; run createindex)" in described.getvalue()
        with caplog.at_level(logging.WARNING, logger="dynalock_django.listing"):
            page = logged_in(viewer).get(LIVE_LOCKS)
            assert "held-job" in dynalock_list()
        assert "held-job" in page.content.decode()
        assert not page.context["page"].from_index
        assert len([r for r in caplog.records if "no usable live-locks index" in r.getMessage()]) == 1

        created = StringIO()
        call_command("dynalock", "createindex", stdout=created)  # moto adds it at once; DynamoDB takes minutes
        assert "Creating index 'liveLocks'" in created.getvalue()
        assert "the live-locks index is ready" in created.getvalue()
        again = logged_in(viewer).get(LIVE_LOCKS)
        assert again.context["page"].from_index
        assert "held-job" in again.content.decode()
        lease.release()
