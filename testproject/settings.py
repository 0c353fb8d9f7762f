"""Settings of the support-desk test project, read from the environment with django-environ.

DATABASE_URL            sqlite:///db.sqlite3 by default (any django-environ URL)
DYNALOCK_TABLE_NAME     the lock table (default "dynalock-desk")
DYNALOCK_ENDPOINT_URL   a DynamoDB-compatible endpoint; unset means AWS itself
DYNALOCK_LEASE_DURATION / DYNALOCK_HEARTBEAT_PERIOD   seconds
DYNALOCK_MAX_CLOCK_SKEW seconds; unset compares no clocks (docs/guarantees.md)
AWS_*                   credentials and region, boto3's normal chain
"""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="insecure-test-project-key-never-use-in-production")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dynalock_django",
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
    # The recommended safety net: a view that locks by hand and does not catch LockTimeout or DynamoDBUnavailable
    # answers 423 or 503, not 500 (the desk's "Add note" catches them itself, to keep the typed note on its page).
    "dynalock_django.middleware.LockErrorsMiddleware",
]

ROOT_URLCONF = "testproject.urls"

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

WSGI_APPLICATION = "testproject.wsgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
LOGIN_URL = "admin:login"

DYNALOCK = {
    "TABLE_NAME": env.str("DYNALOCK_TABLE_NAME", default="dynalock-desk"),
    "ENDPOINT_URL": env.str("DYNALOCK_ENDPOINT_URL", default=None),
    "REGION_NAME": env.str("AWS_DEFAULT_REGION", default="us-east-1"),
    "LEASE_DURATION": env.float("DYNALOCK_LEASE_DURATION", default=20.0),
    "HEARTBEAT_PERIOD": env.float("DYNALOCK_HEARTBEAT_PERIOD", default=5.0),
    "MAX_CLOCK_SKEW": env.float("DYNALOCK_MAX_CLOCK_SKEW", default=None),
}
