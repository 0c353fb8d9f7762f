"""The package's shape: small modules and classes with names that do not collide, and a map of them that matches."""

from __future__ import annotations

import ast
import collections
import graphlib
import importlib
import re
from pathlib import Path

import grimp

import dynalock_django
from dynalock_django.dynamodb.clock import SYSTEM_CLOCK
from dynalock_django.dynamodb.wire import writes
from dynalock_django.dynamodb.wire.layout import TableLayout
from dynalock_django.dynamodb.wire.writes import Stamp

PACKAGE = Path(dynalock_django.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 300
MAX_MODULES_PER_FOLDER = 15


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_400_lines():
    sizes = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines()) for path in modules()}
    assert {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}
    assert len(sizes) > 50  # the whole package was read


def test_no_class_is_over_300_lines():
    classes = {}
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
                classes[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = node.end_lineno - start + 1
    assert {name: lines for name, lines in classes.items() if lines > MAX_CLASS_LINES} == {}
    assert "dynamodb/lock_client.py:LockClient" in classes  # the whole package was read


def test_no_two_modules_or_classes_share_a_name():
    """One name, one thing. The exception tree is the Django layer's and the protocol's: it adds to the protocol's."""
    basenames = collections.Counter(path.name for path in modules() if path.name != "__init__.py")
    classes = collections.Counter(
        node.name
        for path in modules()
        for node in ast.walk(ast.parse(path.read_text()))
        # Django's inner options class, and the class every migration names Migration
        if isinstance(node, ast.ClassDef) and node.name not in {"Meta", "Migration"}
    )
    assert {name for name, count in basenames.items() if count > 1} == {"exceptions.py"}
    assert {name for name, count in classes.items() if count > 1} == set()


def test_docs_architecture_md_has_a_line_for_every_module_and_names_no_other():
    """A row ``| `admin/live_locks.py` | what it owns |`` per module; empty package markers need none."""
    documented = re.findall(r"^\| `([\w/]+\.py)` \| \S", ARCHITECTURE.read_text(), flags=re.MULTILINE)
    package = {path.relative_to(PACKAGE).as_posix() for path in modules() if path.read_text().strip()}
    assert len(documented) == len(set(documented))  # one line each
    assert package - set(documented) == set()  # every module is on the map
    assert set(documented) - package == set()  # and the map names only modules that exist


def test_no_import_circle_even_through_type_only_imports():
    """A circle is a knot a reader cannot start from; ``if TYPE_CHECKING:`` imports count, as they do for a reader."""
    graph = grimp.build_graph("dynalock_django", exclude_type_checking_imports=False, cache_dir=None)
    sorter = graphlib.TopologicalSorter(
        {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    )
    try:
        sorter.prepare()
    except graphlib.CycleError as circle:
        raise AssertionError(f"import circle: {' -> '.join(circle.args[1])}") from None
    assert "dynalock_django.dynamodb.lock_client" in graph.modules  # the whole package was read


def test_no_folder_of_the_protocol_holds_more_than_15_modules():
    """The protocol's wings stay small enough to read as a floor plan (``__init__.py`` not counted)."""
    protocol = PACKAGE / "dynamodb"
    folders = {path.parent for path in protocol.rglob("*.py")}
    sizes = {
        folder.relative_to(PACKAGE).as_posix(): len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        for folder in folders
    }
    assert {folder: size for folder, size in sizes.items() if size > MAX_MODULES_PER_FOLDER} == {}
    assert {"dynamodb", "dynamodb/acquiring", "dynamodb/leases", "dynamodb/aws", "dynamodb/wire"} <= set(sizes)


def walkthrough() -> str:
    text = ARCHITECTURE.read_text()
    return text[text.index("## One `lock_object(customer)`") :]


def test_every_name_the_walkthrough_quotes_exists():
    """``Class.method``, ``module.name`` and ``path.py`` in the walkthrough name what the package has today."""
    classes: dict[str, list[type]] = collections.defaultdict(list)
    modules_by_name: dict[str, list[object]] = collections.defaultdict(list)
    for path in modules():
        dotted = ".".join(("dynalock_django", *path.relative_to(PACKAGE).with_suffix("").parts))
        module = importlib.import_module(dotted.removesuffix(".__init__"))
        modules_by_name[path.stem].append(module)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                classes[value.__name__].append(value)
    quoted = set(re.findall(r"`([A-Za-z_]+)\.([A-Za-z_]+)(?:\(\))?`", walkthrough()))
    quoted -= {("transaction", "atomic")}  # Django's, not ours
    missing = [
        f"{owner}.{name}"
        for owner, name in sorted(quoted)
        if not any(hasattr(found, name) for found in [*classes.get(owner, []), *modules_by_name.get(owner, [])])
    ]
    assert missing == []
    assert len(quoted) > 25  # the walkthrough was read
    paths = set(re.findall(r"`((?:dynamodb/)?[\w/]+\.py)`", walkthrough()))
    assert {path for path in paths if not (PACKAGE / path).exists() and not (PACKAGE.parent / path).exists()} == set()


def test_the_walkthroughs_acquire_request_is_the_one_the_code_sends():
    """The request parameters the walkthrough quotes are the ones ``writes.acquire`` builds."""
    request = writes.acquire(
        TableLayout("locks", "key", None, "ttl"),
        ("desk.customer:42", None),
        Stamp.new("me", 20.0, SYSTEM_CLOCK),
        data=None,
        observed=None,
        may_take_over=False,
        pending=[],
    )
    quoted = dict(re.findall(r"`(ReturnValues\w*)=(\w+)`", walkthrough()))
    assert quoted == {name: request[name] for name in quoted}
    assert set(quoted) == {"ReturnValues", "ReturnValuesOnConditionCheckFailure"}
