"""The Django layer's telemetry: a lock's kind and model (never its key unless TRACE_KEYS), task skips, admin events."""

from __future__ import annotations

import pytest
from django.test import override_settings

from dynalock_django import lock_key, lock_object, semaphore
from dynalock_django.keys import key_for_instance, telemetry_attributes

from ..otel_support import recorded
from .admin.edit_locking.test_admin_edit_lock import edit_lock_url, open_page, ticket_of
from .admin_support import logged_in
from .tasks import jobs
from .tasks.test_lock_task import key_of

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def otel():
    telemetry = recorded()
    telemetry.reset()
    return telemetry


def test_a_rows_lock_is_described_by_its_kind_and_model_and_never_its_key(otel, customer):
    with lock_object(customer):
        pass
    (span,) = otel.spans("dynalock.acquire")
    assert span.attributes == {
        "dynalock.kind": "object",
        "dynalock.model": "desk.customer",
        "dynalock.outcome": "acquired",
    }
    collected = otel.collect()
    (held,) = collected.of("dynalock.hold.duration")
    assert held.attributes == {"dynalock.kind": "object", "dynalock.model": "desk.customer"}
    key = key_for_instance(customer)
    assert all(key not in str(point.attributes) for point in collected.points)


def test_trace_keys_puts_the_key_on_spans_but_not_on_metrics(otel, customer, dynalock):
    with override_settings(DYNALOCK={**dynalock, "TRACE_KEYS": True}), lock_object(customer):
        pass
    (span,) = otel.spans("dynalock.acquire")
    assert span.attributes["dynalock.key"] == key_for_instance(customer)
    assert all("dynalock.key" not in point.attributes for point in otel.collect().points)


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("desk.customer:7", "object"),
        ("nightly-report", "name"),
        ("report:daily", "name"),
        ("billing.tasks.invoice(account_id=7)", "task"),
        ("queued billing.tasks.invoice(account_id=7)", "queued task"),
        ("exports#permit-2", "semaphore"),
        ("billing.tasks.invoice(account_id=7)#permit-0", "semaphore"),
        ("desk.customer:7#reader-3", "read"),
        ("exports#permit-x", "name"),
    ],
)
def test_kinds_are_read_from_the_keys_text(key, kind):
    assert telemetry_attributes(key)["dynalock.kind"] == kind


def test_counted_locks_are_described_as_semaphore_and_read_with_the_rows_model_and_no_key_text(otel, customer):
    with semaphore("exports", 2), lock_object(customer, shared=True):
        pass
    held = {tuple(sorted(point.attributes.items())) for point in otel.collect().of("dynalock.hold.duration")}
    assert held == {
        (("dynalock.kind", "semaphore"),),
        (("dynalock.kind", "read"), ("dynalock.model", "desk.customer")),
    }
    hostile = telemetry_attributes("alice@example.com:7#reader-0")
    assert hostile == {"dynalock.kind": "read"}


# Keys whose text before ":" is no label of an installed model's rows: people's addresses, and hostile keys dressed
# as a model key (a model not installed, a label in another case, a proxy's label, whose rows are its parent's).
NOT_MODEL_KEYS = (
    "user:alice@example.com",
    "alice@example.com:7",
    "bob.smith@example.org:invoice",
    "evil.secret_model:1",
    "Desk.Customer:1",
    "testapp.accountproxy:1",
    "desk.customer.alice@example.com:1",
)


def test_only_installed_models_labels_or_name_reach_an_attribute(otel, customer):
    for key in NOT_MODEL_KEYS:
        with lock_key(key):
            pass
    with lock_object(customer):
        pass

    spans = otel.spans()
    points = otel.collect().points
    assert spans
    assert points
    seen = [dict(span.attributes or {}) for span in spans] + [point.attributes for point in points]
    seen += [dict(event.attributes or {}) for span in spans for event in span.events]
    values = {str(value) for attributes in seen for value in attributes.values()}
    texts = {part for key in NOT_MODEL_KEYS for part in key.split(":") if len(part) > 3}
    assert {value for value in values for text in texts if text in value} == set()
    models = {attributes["dynalock.model"] for attributes in seen if "dynalock.model" in attributes}
    assert models == {"desk.customer"}
    acquires = otel.spans("dynalock.acquire")
    kinds = [span.attributes["dynalock.kind"] for span in acquires]
    assert kinds == ["name"] * len(NOT_MODEL_KEYS) + ["object"]


def test_a_named_lock_is_of_kind_name(otel):
    with lock_key("nightly-report"):
        pass
    assert otel.spans("dynalock.acquire")[0].attributes["dynalock.kind"] == "name"


def test_a_skipped_task_run_is_counted_by_task(otel, other_holder):
    held = other_holder.acquire(key_of(jobs.plain, 7, "x"))
    try:
        assert jobs.plain(7, "x") is None
    finally:
        held.release()
    skipped = otel.collect().of("dynalock.tasks.skipped")
    assert [(point.attributes, point.value) for point in skipped] == [
        ({"dynalock.task": "tests.django.tasks.jobs.plain"}, 1)
    ]


def test_the_admins_ask_hand_over_and_idle_release_are_events_on_the_requests_span(otel, alice, bob, customer):
    alices, bobs = logged_in(alice), logged_in(bob)
    ticket = ticket_of(open_page(alices, customer))
    with otel.tracer.start_as_current_span("request") as asked:
        assert bobs.post(edit_lock_url(customer, "ask")).json()["state"] == "waiting"
    assert alices.post(edit_lock_url(customer, "release"), {"ticket": str(ticket)}).json() == {"state": "released"}
    with otel.tracer.start_as_current_span("request") as handed:
        answer = bobs.post(edit_lock_url(customer, "wait")).json()
    assert answer["state"] == "taken"
    bobs_ticket = ticket_of(open_page(bobs, customer))  # the page reloads, handed the lock
    with otel.tracer.start_as_current_span("request") as idle:
        released = bobs.post(edit_lock_url(customer, "release"), {"ticket": str(bobs_ticket), "idle": "1"})
    assert released.json() == {"state": "released"}

    described = {"dynalock.kind": "object", "dynalock.model": "desk.customer"}
    for span, event in (
        (asked, "dynalock.edit.ask"),
        (handed, "dynalock.edit.hand_over"),
        (idle, "dynalock.edit.idle_release"),
    ):
        assert [(e.name, dict(e.attributes)) for e in span.events if e.name.startswith("dynalock.edit")] == [
            (event, described)
        ]
