"""The package as a user gets it: built, installed from its wheel into a fresh virtualenv, set up as the README says.

One build and one virtualenv per test run (pip's cache makes the install
quick). Then, per store, in a new ``django-admin startproject``: the README's
settings, its commands, the admin's pages and ``lock_object`` across two
processes, with nothing from this repository on the path and nothing patched.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import django
import pytest

from .. import readme
from .dists import Dists, build, handed_in

HERE = Path(__file__).resolve().parent
PACKAGE = "dynalock_django"

pytestmark = [pytest.mark.processes, pytest.mark.slow]


def run(command, **options):
    """Run it; on failure, fail the test with what it printed."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, **options)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """sdist, then the wheel built from it, as ``python -m build`` does in a fresh clone (with today's edits):
    CI's, built once for both legs from this very checkout (``$DYNALOCK_TEST_DISTS``), or built here."""
    return handed_in() or build(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def venv(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the README's ``pip install``, the wheel standing in for the index's release."""
    home = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", str(home)])
    install, *_ = readme.commands()
    assert install == "pip install dynalock-django"
    # No extras; this run's Django (the CI matrix: 5.2 LTS, 6.x) rather than the newest.
    pip = [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
    run([*pip, str(dists.wheel), f"Django=={django.__version__}"])
    return home


def test_the_sdist_and_the_wheel_pass_the_package_indexs_checks(dists):
    """What PyPI would refuse at upload (metadata, a README that does not render) fails here first."""
    pytest.importorskip("twine", reason="twine comes with the dev extra: pip install -e '.[dev]'")
    run([sys.executable, "-m", "twine", "check", "--strict", str(dists.sdist), str(dists.wheel)])


def test_the_wheel_holds_the_package_and_nothing_else(dists):
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    shipped = {n for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    tree = dists.source / PACKAGE
    source = {path.relative_to(dists.source).as_posix() for path in tree.rglob("*") if path.is_file()}
    assert shipped == source  # templates, static files, migrations, py.typed: every file, no stray one
    for expected in (
        f"{PACKAGE}/py.typed",
        f"{PACKAGE}/migrations/0001_initial.py",
        f"{PACKAGE}/templates/admin/{PACKAGE}/live_locks/change_list.html",
        f"{PACKAGE}/static/{PACKAGE}/edit_lock.js",
    ):
        assert expected in shipped
    translations = {n for n in source if n.startswith(f"{PACKAGE}/locale/")}
    assert translations <= shipped
    assert not any(n.startswith(("tests/", "testproject/", "node_modules/")) for n in names)
    # What a plain `pip install` brings: Django and boto3 only, nothing from the test extras.
    required = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert sorted(r.split()[1].split(">")[0] for r in required) == ["Django", "boto3"]
    with tarfile.open(dists.sdist) as sdist:
        assert any(n.endswith("/pyproject.toml") for n in sdist.getnames())


def test_installed_in_a_new_project_as_the_readme_says(venv, store, tmp_path):
    project = Project(venv, tmp_path / "site", store.endpoint_url)

    # A new project with an app of the user's own, then the README's settings, model and admin.
    project.command("django-admin", "startproject", "mysite", str(project.path), cwd=tmp_path)
    project.manage("startapp", "desk")
    (project.path / "desk" / "models.py").write_text(readme.python_block("models.py"))
    (project.path / "desk" / "admin.py").write_text(readme.python_block("admin.py"))
    settings = project.path / "mysite" / "settings.py"
    settings.write_text(f'{settings.read_text()}\nINSTALLED_APPS += ["desk"]\n\n{readme.python_block("settings.py")}')
    project.manage("makemigrations", "desk")
    project.manage("check", "--fail-level", "WARNING")  # not one warning in a plain project

    # The README's commands, as written.
    outputs = {}
    for line in readme.commands()[1:]:
        assert line.startswith("python manage.py "), f"README step the test cannot run: {line!r}"
        outputs[line] = project.manage(*line.split()[2:])
    created = outputs["python manage.py dynalock createtable"]
    again = project.manage("dynalock", "createtable")  # idempotent
    assert "already exists" in again.stdout
    described = outputs["python manage.py dynalock describe"].stdout
    assert re.search(r"^status +ACTIVE$", described, re.MULTILINE), described
    assert re.search(r"^live-locks index +ACTIVE$", described, re.MULTILINE), described
    deploy = outputs["python manage.py check --deploy --tag dynalock"]
    dynalock_checks = re.findall(r"\(dynalock\.\w+\)", deploy.stdout + deploy.stderr)
    if store.supports("ttl"):
        assert re.search(r"^TTL +ENABLED on ttl$", described, re.MULTILINE), described
        assert dynalock_checks == []
    else:  # dynalite: created all the same, with a warning, every time; not an error anywhere
        for done in (created, again):
            assert "expired lock items will not be cleaned up" in done.stderr
        assert re.search(r"^TTL +DISABLED$", described, re.MULTILINE), described
        assert dynalock_checks == ["(dynalock.W020)"]

    pages = json.loads(project.python(str(HERE / "admin_pages.py")).stdout)
    assert pages["package"].startswith(str(venv))  # the installed package, not this checkout
    assert pages.pop("moto installed") is False  # no extras: moto is only in the test extra
    assert pages.pop("status") == {"index": 200, "change": 200, "live locks": 200}
    assert pages.pop("package")
    assert all(pages.values()), pages

    # lock_object: held in one process, refused in another, then free.
    hold_lock = str(HERE / "hold_lock.py")
    holder = subprocess.Popen(
        [str(venv / "bin" / "python"), hold_lock, "hold", "Ada"],
        cwd=project.path,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "HELD\n"
        assert project.python(hold_lock, "try", "Ada").stdout.startswith("REFUSED ")
        holder.communicate("", timeout=60)
    finally:
        holder.kill()
    assert holder.returncode == 0
    assert project.python(hold_lock, "try", "Ada").stdout == "ACQUIRED\n"


class Project:
    """A directory with a Django project, and the environment its commands run in: the user's, not ours."""

    def __init__(self, venv: Path, path: Path, endpoint_url: str) -> None:
        self.venv, self.path = venv, path
        path.mkdir()
        self.env = {
            "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "HOME": os.environ.get("HOME", str(path)),
            "PYTHONPATH": str(path),  # for the scripts run from this directory's parent
            "DJANGO_SETTINGS_MODULE": "mysite.settings",
            # Credentials and region through boto3's chain, the endpoint too: nothing of it in settings.
            **{name: value for name, value in os.environ.items() if name.startswith("AWS_")},
            "AWS_ENDPOINT_URL_DYNAMODB": endpoint_url,
        }

    def command(self, *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return run([str(self.venv / "bin" / command[0]), *command[1:]], cwd=cwd or self.path, env=self.env)

    def python(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        return self.command("python", *arguments)

    def manage(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        return self.python("manage.py", *arguments)
