"""Nothing that runs may subscript a class only django-stubs makes generic (``ModelAdmin[...]`` and the like).

Django's ``ModelAdmin``, ``ModelForm``, fields, inlines... are not subscriptable:
``ModelAdmin[Lock]`` raises TypeError unless ``django_stubs_ext.monkeypatch()``
ran, which a user's project never does. Such subscripts belong in annotations
(never evaluated under ``from __future__ import annotations``) or under
``if TYPE_CHECKING:``. This finds every other subscript in the package and the
test project, resolves what it subscripts, and fails on a class that would raise.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import django
import pytest
from django.contrib import admin

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["dynalock_django", "testproject"]


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found.append((name, path))
    return found


def evaluated_subscripts(tree: ast.Module) -> list[ast.Subscript]:
    """Subscripts Python evaluates when the code runs: not in lazy annotations, not under TYPE_CHECKING."""
    lazy_annotations = any(
        isinstance(node, ast.ImportFrom) and node.module == "__future__" and node.names[0].name == "annotations"
        for node in tree.body
    )
    found: list[ast.Subscript] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and ast.unparse(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}:
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, ast.Subscript):
            found.append(node)
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST) or _lazy(node, field, child, lazy_annotations, in_function):
                    continue
                visit(child, in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, in_function=False)
    return found


def _lazy(parent: ast.AST, field: str, child: ast.AST, lazy_annotations: bool, in_function: bool) -> bool:
    """Is ``child`` an annotation Python never evaluates?"""
    if isinstance(parent, ast.AnnAssign) and field == "annotation":
        return lazy_annotations or in_function  # a local variable's annotation is never evaluated
    if isinstance(parent, ast.arg) and field == "annotation":
        return lazy_annotations
    if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef) and field == "returns":
        return lazy_annotations
    return False


def raises_when_subscripted(value: object) -> bool:
    subscriptable = hasattr(value, "__class_getitem__") or hasattr(type(value), "__getitem__")
    return isinstance(value, type) and not subscriptable


def resolve(expression: ast.expr, namespace: dict[str, object]) -> object:
    """What a name or dotted name refers to in the module (None: a local, or not a plain name)."""
    if isinstance(expression, ast.Name):
        return namespace.get(expression.id)
    if isinstance(expression, ast.Attribute):
        owner = resolve(expression.value, namespace)
        return getattr(owner, expression.attr, None) if owner is not None else None
    return None


@pytest.fixture(autouse=True)
def unpatched_django(monkeypatch: pytest.MonkeyPatch) -> None:
    """Django as a user's project has it: django-tasks and django-tasks-db (test dependencies of the run-once
    tasks) run ``django_stubs_ext.monkeypatch()`` when imported, which this module's checks must not lean on."""
    import django_stubs_ext.patch

    for spec in django_stubs_ext.patch._need_generic:  # the classes it makes generic on this Django, no other
        if (spec.version is None or django.VERSION[:2] <= spec.version) and "__class_getitem__" in vars(spec.cls):
            monkeypatch.delattr(spec.cls, "__class_getitem__")


def test_django_is_not_patched_so_this_check_means_something():
    assert not hasattr(admin.ModelAdmin, "__class_getitem__"), "something ran django_stubs_ext.monkeypatch()"


@pytest.mark.parametrize(("module", "path"), modules(), ids=[name for name, _ in modules()])
def test_nothing_subscripts_a_class_django_does_not_make_generic(module, path):
    namespace = vars(importlib.import_module(module))
    tree = ast.parse(path.read_text(), filename=str(path))
    offending = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}"
        for node in evaluated_subscripts(tree)
        if raises_when_subscripted(resolve(node.value, namespace))
    ]
    assert offending == [], "subscripted at run time; alias it under `if TYPE_CHECKING:` instead"


def test_the_check_finds_a_subscripted_model_admin_and_ignores_annotations():
    source = """
from __future__ import annotations
from typing import TYPE_CHECKING
from django.contrib import admin
if TYPE_CHECKING:
    Alias = admin.ModelAdmin[int]
class Broken(admin.ModelAdmin[int]):
    def method(self, queryset: admin.ModelAdmin[int]) -> admin.ModelAdmin[int]:
        local: admin.ModelAdmin[int] = self
        return local
"""
    tree = ast.parse(source)
    namespace = {"admin": admin}
    flagged = [node for node in evaluated_subscripts(tree) if raises_when_subscripted(resolve(node.value, namespace))]
    assert [node.lineno for node in flagged] == [7]
