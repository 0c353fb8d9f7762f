"""The suite's settings: a project as a user has one — Django's stock apps and middleware, the package.

Nothing here patches Django (no ``django_stubs_ext.monkeypatch()``), so the
package runs as it does in a user's project. Besides the package: the test
app (``tests.django.testapp``: models with every kind of primary key) and the
demo's app (``testproject.desk``), whose pages the demo and browser tests use.

``DYNALOCK_TEST_SETTINGS`` (JSON) replaces ``DYNALOCK``; ``DYNALOCK_TEST_DATABASE`` puts the
database in a file that several processes share.
The test database is a file too, not SQLite in memory: the live server's threads
(browser tests) then get connections of their own, and a request still running as
a test's database is flushed makes the flush wait, instead of failing on a
table locked by a statement of the one shared in-memory connection.
"""

import json
import os
import tempfile

SECRET_KEY = "insecure-key-for-the-tests-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dynalock_django",
    "tests.django.testapp",
    "testproject.desk",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "testproject.urls"  # the admin and the demo's pages

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DYNALOCK_TEST_DATABASE", ":memory:"),
        "TEST": {"NAME": os.path.join(tempfile.gettempdir(), f"dynalock-test-{os.getpid()}.sqlite3")},
    }
}
if os.environ.get("DYNALOCK_TEST_SQLITE_SHARED"):
    # Several processes writing one file on a loaded machine: wait for the file's lock (not Python's 5 s), and take
    # the write lock when a transaction begins, so a read that turns into a write is never refused at once (BUSY).
    DATABASES["default"]["OPTIONS"] = {"timeout": 60, "transaction_mode": "IMMEDIATE"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
LOGIN_URL = "admin:login"

# A Django-layer test that needs DynamoDB is marked uses_dynalock: DYNALOCK then points at a table of its own
# (tests/django/conftest.py). Any other test that reaches for DynamoDB fails at once: this name is invalid, so
# building the client raises a ConfigurationError that quotes it.
# Processes a test starts (tests/django/fencing_worker.py) are given its table in DYNALOCK_TEST_SETTINGS.
NO_TABLE = {"TABLE_NAME": "no table: mark the test uses_dynalock"}
DYNALOCK = json.loads(os.environ["DYNALOCK_TEST_SETTINGS"]) if os.environ.get("DYNALOCK_TEST_SETTINGS") else NO_TABLE
