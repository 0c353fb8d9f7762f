"""dynalock_django.testing gives users' test cases a working lock table."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.test import SimpleTestCase

from dynalock_django import lock_key
from dynalock_django.client import get_client
from dynalock_django.testing import DynalockTestMixin


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
