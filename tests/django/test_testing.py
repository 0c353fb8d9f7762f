"""dynalock_django.testing on its own: each helper gives a test a working lock table of its own.

Nothing here has the suite's table (no ``uses_dynalock`` marker): what passes here is
the helpers' doing. The last test runs them in a project of a user's, in a process of
its own, without this suite's conftest, settings or AWS variables.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

from django.conf import settings
from django.test import SimpleTestCase

import dynalock_django
from dynalock_django import lock_key
from dynalock_django.client import get_client
from dynalock_django.testing import ENDPOINT_ENV, DynalockTestMixin, local_endpoint_url, lock_table
from tests.settings import NO_TABLE


def test_this_module_runs_without_the_suites_table(request):
    assert "dynalock" not in request.fixturenames
    assert settings.DYNALOCK == NO_TABLE


def test_lock_table_gives_each_block_a_new_table_and_restores_the_settings():
    with lock_table(KEY_PREFIX="t:") as first:
        assert first == settings.DYNALOCK
        assert first["TABLE_NAME"].startswith("dynalock-test-")
        assert get_client().check_table().is_usable
        held = lock_key("job").acquire()  # and left held: the next block must not see it
        assert held.key == "t:job"
    assert settings.DYNALOCK == NO_TABLE
    with lock_table(KEY_PREFIX="t:") as second:
        assert second["TABLE_NAME"] != first["TABLE_NAME"]
        with lock_key("job", blocking=False) as lease:
            assert lease.fencing_token is not None
        tables = get_client().dynamodb.list_tables()["TableNames"]
        assert second["TABLE_NAME"] in tables
        assert first["TABLE_NAME"] not in tables  # deleted as its block ended
    assert settings.DYNALOCK == NO_TABLE


def test_an_endpoint_named_in_the_environment_replaces_the_local_one(monkeypatch):
    monkeypatch.setenv(ENDPOINT_ENV, "http://dynamodb.test:8000")
    assert local_endpoint_url() == "http://dynamodb.test:8000"


class MixinTests(DynalockTestMixin, SimpleTestCase):
    dynalock_overrides: ClassVar[dict[str, str]] = {"KEY_PREFIX": "mixin:"}

    def test_locks_work_on_a_table_of_its_own(self):
        assert settings.DYNALOCK["TABLE_NAME"].startswith("dynalock-test-")
        with lock_key("job") as lease:
            assert lease.key == "mixin:job"
        assert get_client().get("mixin:job").is_released


def test_the_pytest_fixture_points_dynalock_at_a_fresh_table(dynalock_table):
    assert settings.DYNALOCK["TABLE_NAME"] == dynalock_table["TABLE_NAME"]
    assert list(get_client().scan()) == []
    assert get_client().check_table().is_usable


USER_SETTINGS = """
SECRET_KEY = "x"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "dynalock_django", "customers"]
ROOT_URLCONF = "customers.urls"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}]  # startproject's
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
"""

# The app the docs' view example belongs to: its model and its URL.
CUSTOMER_MODEL = """
from django.db import models


class Customer(models.Model):
    name = models.CharField(max_length=100)
"""
CUSTOMER_URLS = """
from django.urls import path

from . import views

urlpatterns = [path("customers/<int:pk>/rename/", views.rename)]
"""

USER_TESTS = """
from dynalock_django import lock_key
from dynalock_django.client import get_client


def test_with_the_fixture(dynalock_table):
    with lock_key("job") as lease:
        assert get_client().get("job").fencing_token == lease.fencing_token
"""

# After the docs' mixin example (its class EditTests, as written), a test of it.
USER_MIXIN_TEST = """

from dynalock_django import lock_key
from dynalock_django.client import get_client


class EditTestsAsDocumented(EditTests):
    def test_with_the_mixin(self):
        with lock_key("job") as lease:
            assert lease.remaining() <= 10.0  # the example's lease
        assert get_client().get("job").is_released
"""


def docs_example(containing: str) -> str:
    """The one python block of docs/django/testing.md that holds ``containing``, as written there."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "django" / "testing.md").read_text()
    [block] = [code for code in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if containing in code]
    return block


def in_memory_example() -> str:
    """The test docs/django/testing.md shows first (its in-memory example)."""
    return docs_example("def test_a_dead_workers_lock_is_taken_over_a_lease_later")


def mixin_example() -> str:
    """The docs' unittest example: ``class EditTests(DynalockTestMixin, TestCase)`` with its overrides."""
    return docs_example("class EditTests(DynalockTestMixin")


def view_examples() -> tuple[str, str]:
    """The docs' first test, of a view answering 423: the view, and the test."""
    return docs_example("# customers/views.py"), docs_example("# customers/test_views.py")


def test_a_users_project_gets_working_tables_from_the_docs_setup_alone(tmp_path):
    """docs/django/testing.md, followed: the plugin in conftest.py, its examples, the fixture, the mixin."""
    (tmp_path / "user_settings.py").write_text(USER_SETTINGS)
    customers = tmp_path / "customers"
    customers.mkdir()
    view, view_test = view_examples()
    (customers / "__init__.py").write_text("")
    (customers / "models.py").write_text(CUSTOMER_MODEL)
    (customers / "urls.py").write_text(CUSTOMER_URLS)
    (customers / "views.py").write_text(view)
    (customers / "test_views.py").write_text(view_test)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["dynalock_django.testing"]\n')
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TESTS))
    (tmp_path / "test_in_memory.py").write_text(in_memory_example())
    (tmp_path / "test_mixin.py").write_text(mixin_example() + USER_MIXIN_TEST)
    env = {name: value for name, value in os.environ.items() if not name.startswith(("AWS_", "DYNALOCK_", "DJANGO_"))}
    # The project first; then the package this run imports (an editable install may be another checkout's).
    package_root = Path(dynalock_django.__file__).resolve().parents[1]
    env |= {
        "DJANGO_SETTINGS_MODULE": "user_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(package_root)]),
    }
    done = subprocess.run(
        # Every warning an error: the docs' examples, pasted, run clean (no RetryBudgetWarning for a short lease).
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-W",
            "error",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
