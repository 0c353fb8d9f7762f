"""Run inside the new project by the installed-package test: the admin's pages, through Django's test client.

Prints one JSON object: where dynalock_django was imported from, each page's
status, and what the pages show of the edit lock.
"""

import importlib.util
import json

import django

django.setup()

from desk.models import Customer  # noqa: E402 (the project's own app)
from django.contrib.auth import get_user_model  # noqa: E402 (after setup)
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

import dynalock_django  # noqa: E402

setup_test_environment()  # the test client's host, 'testserver', is allowed
user = get_user_model().objects.create_superuser("ada", "ada@example.com", "unused-password")
customer = Customer.objects.create(name="Grace Hopper")
client = Client()
client.force_login(user)

index = client.get("/admin/")
change = client.get(f"/admin/desk/customer/{customer.pk}/change/")  # takes the edit lock
live_locks = client.get("/admin/dynalock_django/lock/")  # shows it
print(
    json.dumps(
        {
            "package": dynalock_django.__file__,
            "moto installed": importlib.util.find_spec("moto") is not None,
            "status": {"index": index.status_code, "change": change.status_code, "live locks": live_locks.status_code},
            "index links the live locks": b'href="/admin/dynalock_django/lock/"' in index.content,
            "change page holds the edit lock": b'name="_dynalock_ticket"' in change.content,
            "live locks list it": str(customer) in live_locks.content.decode(),
            "live locks name the holder": ">ada</a>" in live_locks.content.decode(),  # linked to her user
        }
    )
)
