"""The test project's settings plus the models the Django-layer tests lock.

``DYNALOCK_TEST_DATABASE`` puts the database in a file that several processes share.
The test database is a file too, not SQLite in memory: the live server's threads
(browser tests) then get connections of their own, and a request still running as
a test's database is flushed makes the flush wait, instead of failing on a
table locked by a statement of the one shared in-memory connection.
"""

import os
import tempfile

from testproject.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.django.testapp"]  # noqa: F405
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DYNALOCK_TEST_DATABASE", ":memory:"),
        "TEST": {"NAME": os.path.join(tempfile.gettempdir(), f"dynalock-test-{os.getpid()}.sqlite3")},
    }
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
