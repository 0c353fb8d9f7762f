"""The test project's staff views: edits are saved under the customer's lock, through the fence."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from dynalock_django.client import get_client
from dynalock_django.keys import key_for_instance
from dynalock_django.payload import LockData
from testproject.desk.models import Customer

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
    call_command("demo", "--no-serve", stdout=StringIO())
    assert Customer.objects.count() == 5
    assert set(django_user_model.objects.filter(is_staff=True).values_list("username", flat=True)) == {
        "alice",
        "bob",
        "carol",
    }
    assert django_user_model.objects.get(username="alice").check_password("alice-demo")
