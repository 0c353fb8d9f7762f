"""Imported once by the multi-process tests' fork server (tests/worker_processes.py), so its forks start warm.

A worker forked from it still sets Django up with its own settings and makes its own clients; what it
no longer pays for, each of the dozens a test starts (a chaos run's workers, their replacements): the
modules Django's setup imports that read no setting (a tenth of a second of CPU), and botocore's
service models (another: the first client of a process loads them, and ``new_session`` shares them
with the process's later clients, a fork's included; tests/django/tasks/warm_start.py does the same).
Nothing is opened here: the client is made and closed before any fork.
"""

from __future__ import annotations

import django.contrib.admin.options
import django.contrib.admin.sites
import django.contrib.messages.storage.fallback
import django.contrib.staticfiles.finders
import django.core.mail
import django.core.management
import django.core.serializers.json
import django.db.backends.sqlite3.base
import django.db.migrations
import django.forms
import django.template.defaulttags
import django.views.generic  # noqa: F401 (imported for the forks' sake)

from dynalock_django.dynamodb import build_dynamodb_client

build_dynamodb_client(region_name="us-east-1", endpoint_url="http://127.0.0.1:9").close()
