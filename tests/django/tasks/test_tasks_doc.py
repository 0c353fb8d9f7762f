"""docs/django/tasks.md's first example runs as written on the Django of the run (6, or 5.2 with the backport)."""

from __future__ import annotations

import re
from pathlib import Path

import django
import pytest

TASKS_MD = Path(__file__).resolve().parents[3] / "docs" / "django" / "tasks.md"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def django_tasks_example() -> str:
    """The doc's imports, then its Django Tasks example (up to the Celery one, whose ``app`` is the reader's)."""
    imports, example, *_ = _PYTHON_BLOCK.findall(TASKS_MD.read_text())
    return imports + example.split("# Celery", 1)[0]


def test_the_django_tasks_example_runs_as_written():
    namespace: dict[str, object] = {"__name__": "tasks_doc"}
    exec(compile(django_tasks_example(), str(TASKS_MD), "exec"), namespace)  # the doc's own code, as written
    send_invoice = namespace["send_invoice"]
    task_class = type(send_invoice)
    assert task_class.__name__ == "Task"
    assert task_class.__module__.startswith("django.tasks" if django.VERSION >= (6,) else "django_tasks")
    assert send_invoice.func.__name__ == "send_invoice"


@pytest.mark.skipif(django.VERSION >= (6,), reason="the backport is for Django 5.2")
def test_on_django_5_2_the_doc_names_the_backports_import():
    assert "from django_tasks import task" in TASKS_MD.read_text()
