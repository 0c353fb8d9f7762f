"""The test project's staff views: edits are saved under the customer's lock, through the fence."""

from __future__ import annotations

from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData
from dynalock_django.testing import locks_in_memory
from testproject.desk.models import Customer, Note
from testproject.desk.views import NOTE_WAIT_SECONDS

pytestmark = [pytest.mark.django_db, pytest.mark.uses_dynalock]


@pytest.fixture
def staff(make_staff):
    return make_staff("alice")


def form(**changes):
    return {"name": "Acme", "email": "a@acme.example", "phone": "", "plan": "pro", **changes}


def test_customer_pages_send_anonymous_and_non_staff_users_to_the_login_page(client, customer, django_user_model):
    assert client.get(f"/customers/{customer.pk}/").status_code == 302  # to the login page
    django_user_model.objects.create_user("guest", password="pw")
    client.login(username="guest", password="pw")
    assert client.get(f"/customers/{customer.pk}/").status_code == 302


def test_a_save_is_fenced_with_the_locks_token(client, staff, customer):
    client.force_login(staff)
    response = client.post(f"/customers/{customer.pk}/", form(name="Acme Inc"))
    assert response.status_code == 302
    customer.refresh_from_db()
    stored = get_client().get(key_for_instance(customer))
    assert customer.name == "Acme Inc"
    assert customer.fencing_token == stored.fencing_token
    assert stored.is_released


def test_a_save_while_someone_else_holds_the_lock_is_423_and_writes_nothing(client, staff, customer, other_holder):
    held = other_holder.acquire(key_for_instance(customer), data=LockData(username="bob").to_bytes())
    client.force_login(staff)
    page = client.get(f"/customers/{customer.pk}/")
    assert b"Locked by bob" in page.content
    response = client.post(f"/customers/{customer.pk}/", form(name="Overwritten"))
    assert response.status_code == 423
    customer.refresh_from_db()
    assert customer.name == "Acme"
    held.release()


def test_notes_are_added_under_the_lock(client, staff, customer):
    client.force_login(staff)
    client.post(f"/customers/{customer.pk}/notes/", {"body": "Called about the invoice"})
    assert customer.notes.get().author == staff
    assert get_client().get(key_for_instance(customer)).is_released


def test_demo_setup_seeds_customers_and_staff(dynalock, django_user_model):
    # The demo starts an endpoint of its own, whose first answers (moto loading its backend) may take a loaded
    # machine longer than the suite's 0.5 s read time-out for its fault tests: it runs on the package's defaults
    # (leases, time-outs), as in a new project.
    demo_settings = {name: settings.DYNALOCK[name] for name in ("TABLE_NAME", "REGION_NAME")}
    with override_settings(DYNALOCK=demo_settings):
        call_command("demo", "--no-serve", stdout=StringIO())
    assert Customer.objects.count() == 5
    assert set(django_user_model.objects.filter(is_staff=True).values_list("username", flat=True)) == {
        "alice",
        "bob",
        "carol",
    }
    assert django_user_model.objects.get(username="alice").check_password("alice-demo")
    assert not Note.objects.filter(author=None).exists()  # the page names every note's author, not "?"


# ---------------------------------------------------------------- a colleague, and DynamoDB not answering


@pytest.fixture
def memory():
    """The process's client on an in-process table and a virtual clock: "Add note" waits its 5 s in no time."""
    with locks_in_memory() as memory:
        yield memory


@pytest.fixture
def colleague_editing(memory, customer):
    """bob has the customer open in the admin: another process's client holds its edit lock."""
    held = memory.new_client().acquire(
        key_for_instance(customer), data=LockData(username="bob", purpose="edit").to_bytes()
    )
    yield held
    held.release()


NOTE = "Called about the invoice <b>twice</b>"


def note_kept(response):
    """The typed note is in the note box of the page that answered (escaped)."""
    kept = '<textarea name="body">Called about the invoice &lt;b&gt;twice&lt;/b&gt;</textarea>'
    return kept in response.content.decode()


def test_the_desk_page_says_what_save_and_add_note_do_while_a_colleague_holds_the_customer(
    client, staff, customer, colleague_editing
):
    client.force_login(staff)
    page = client.get(f"/customers/{customer.pk}/").content.decode()
    assert "Locked by bob (edit): Save is refused until they are done; Add note waits up to 5 seconds" in page
    assert "saving waits for them" not in page


def test_a_note_added_while_a_colleague_holds_the_customer_is_423_with_the_note_kept(
    client, staff, customer, colleague_editing, memory
):
    client.force_login(staff)
    started = memory.clock.monotonic()
    response = client.post(f"/customers/{customer.pk}/notes/", {"body": NOTE})
    assert response.status_code == 423
    assert memory.clock.monotonic() - started >= NOTE_WAIT_SECONDS  # it waited as the page says
    assert "bob is still working on Acme: your note was not added yet" in response.content.decode()
    assert note_kept(response)
    assert not customer.notes.exists()
    assert colleague_editing.is_held()


def test_a_save_while_a_colleague_holds_the_customer_is_423_at_once(client, staff, customer, colleague_editing, memory):
    client.force_login(staff)
    started = memory.clock.monotonic()
    response = client.post(f"/customers/{customer.pk}/", form(name="Overwritten"))
    assert response.status_code == 423
    assert memory.clock.monotonic() - started < 1.0


@pytest.fixture
def dynamodb_hung(memory):
    memory.faults.hang()
    yield
    memory.faults.heal()


def test_the_desk_page_is_read_only_with_a_notice_while_dynamodb_does_not_answer(
    client, staff, customer, dynamodb_hung
):
    client.force_login(staff)
    for _ in range(4):  # unanswered calls, then the circuit breaker's refusals: the same page
        response = client.get(customer.get_absolute_url())  # where the admin's "View on site" leads
        assert response.status_code == 200
        page = response.content.decode()
        assert "The lock service is not answering, so nothing can be saved here for now." in page
        assert "<fieldset disabled>" in page
        assert 'value="Acme"' in page  # the customer is read from the database all the same


def test_a_note_added_while_dynamodb_does_not_answer_is_503_with_the_note_kept(client, staff, customer, dynamodb_hung):
    client.force_login(staff)
    for _ in range(4):  # past the circuit breaker's threshold: CircuitOpen is told the same way
        response = client.post(f"/customers/{customer.pk}/notes/", {"body": NOTE})
        assert response.status_code == 503
        assert int(response["Retry-After"]) >= 1
        assert "Your note was not added: it is kept below." in response.content.decode()
        assert note_kept(response)
    assert not customer.notes.exists()


def test_a_save_while_dynamodb_does_not_answer_is_503(client, staff, customer, dynamodb_hung):
    client.force_login(staff)
    response = client.post(f"/customers/{customer.pk}/", form(name="Changed"))
    assert response.status_code == 503
    customer.refresh_from_db()
    assert customer.name == "Acme"
