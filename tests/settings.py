"""The test project's settings plus the models the Django-layer tests lock.

``DYNALOCK_TEST_DATABASE`` puts the database in a file that several processes share.
"""

import os

from testproject.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.django.testapp"]  # noqa: F405
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ.get("DYNALOCK_TEST_DATABASE", ":memory:")}
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
