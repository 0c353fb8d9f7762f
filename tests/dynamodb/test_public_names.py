"""dynalock_django.dynamodb exports every name its docs use, and nothing else."""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from pathlib import Path

import dynalock_django.dynamodb as protocol
from dynalock_django.dynamodb import Lease, LockClient

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_DOC = ROOT / "docs" / "protocol.md"
# What the project's own docs import must exist. (The product design, shared/DESIGN.md, also names
# surfaces still to be built: counted locks.)
DOCS = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]

IMPORT = re.compile(r"from dynalock_django\.dynamodb import ([\w, ]+)")


def defined_in_the_package() -> dict[str, object]:
    """Every public top-level name of every module of the protocol package, its wings' modules included."""
    names: dict[str, object] = {}
    for module_info in pkgutil.walk_packages(protocol.__path__, prefix=f"{protocol.__name__}."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if not name.startswith("_") and getattr(value, "__module__", module.__name__) == module.__name__:
                names.setdefault(name, value)
    return names


def test_every_name_the_docs_import_is_exported():
    imported = set()
    for doc in DOCS:
        if doc.exists():
            for names in IMPORT.findall(doc.read_text()):
                imported.update(name.strip() for name in names.split(","))
    assert "LockClient" in imported
    assert imported <= set(protocol.__all__)


def test_every_protocol_name_docs_protocol_md_mentions_is_exported():
    """Classes, constants and functions of the package that docs/protocol.md shows as code (methods aside)."""
    text = PROTOCOL_DOC.read_text()
    code = "\n".join(re.findall(r"```.*?```|`[^`\n]+`", text, flags=re.DOTALL))
    words = set(re.findall(r"\b[A-Za-z_]\w*\b", code))
    methods = set(dir(LockClient)) | set(dir(Lease))
    mentioned = set()
    for name, value in defined_in_the_package().items():
        if name not in words or name in methods or isinstance(value, types.ModuleType):
            continue
        if isinstance(value, type) or name.isupper() or re.search(rf"`{name}\(", text):
            mentioned.add(name)
    assert mentioned - set(protocol.__all__) == set()
    assert {"LockClient", "LockTimeout", "RECOMMENDED_CONFIG", "build_dynamodb_client"} <= mentioned


def test_everything_exported_is_public_documented_and_listed():
    exported = set(protocol.__all__)
    assert not [name for name in exported if name.startswith("_")]
    assert len(exported) == len(protocol.__all__)  # no duplicates
    text = PROTOCOL_DOC.read_text()
    assert [name for name in sorted(exported) if not re.search(rf"\b{name}\b", text)] == []
    # and the package namespace holds nothing public that __all__ leaves out (its modules aside)
    public = {name for name, value in vars(protocol).items() if not name.startswith("_")}
    modules = {name for name in public if isinstance(getattr(protocol, name), types.ModuleType)}
    assert public - modules == exported
