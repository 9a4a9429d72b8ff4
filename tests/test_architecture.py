"""The package's shape: one package per stage in one layer order, no import cycles, no
function-level imports that hide a layering inversion, no library's private names outside
the two packages that fence them, no module much over 500 lines without a stated reason.

The import graph is built from the source with `ast`, so it sees what a reader sees.
"""

from __future__ import annotations

import ast
from pathlib import Path

import chatui

PACKAGE = Path(chatui.__file__).parent

#: Function-level imports of chatui modules that are allowed, with the reason.
SIGNALS = "AppConfig.ready is where Django connects signals"
ALLOWED_FUNCTION_IMPORTS = {
    ("chatui.apps", "chatui.live"): SIGNALS,
    ("chatui.apps", "chatui.live.approval_clock"): SIGNALS,
    ("chatui.apps", "chatui.live.broadcast"): SIGNALS,
    ("chatui.apps", "chatui.live.revocation"): SIGNALS,
    ("chatui.apps", "chatui.agents"): SIGNALS,
    ("chatui.apps", "chatui.agents.agui"): SIGNALS,
    ("chatui.apps", "chatui.ingest"): SIGNALS,
    ("chatui.apps", "chatui.ingest.attachments"): SIGNALS,
    ("chatui.apps", "chatui.read.cost"): "AppConfig.ready checks CHATUI_PRICES at startup",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {
    module_name(path): path
    for path in PACKAGE.rglob("*.py")
    if "migrations" not in path.relative_to(PACKAGE).parts
}


def imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The chatui modules an import statement loads (a package's `from . import x`
    loads the submodule x)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & MODULES.keys()
    if node.level:
        base = module.split(".")
        if path.name != "__init__.py":
            base.pop()
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    names = {f"{target}.{alias.name}" for alias in node.names}
    if node.module:  # `from . import x` names submodules; `from .x import y` loads x
        names.add(target)
    return names & MODULES.keys()


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """(module-level imports, imports inside functions) of one module."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    top: set[str] = set()
    typing_only: set[str] = set()
    for node in tree.body:
        if isinstance(node, FUNCTION_OR_CLASS):
            continue
        found = set()
        for inner in ast.walk(node):
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                found |= imported(module, path, inner)
        if is_type_checking_block(node):
            typing_only |= found  # never executed: names for annotations only
        else:
            top |= found
    every: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            every |= imported(module, path, node)
    return top - {module}, every - top - typing_only - {module}


def is_type_checking_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    )


FUNCTION_OR_CLASS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
GRAPH = {module: imports_of(module) for module in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_import_graph_is_built_from_the_source():
    assert "chatui.read.selectors" in GRAPH["chatui.web.views"][0]
    assert "chatui.ingest.service" in GRAPH["chatui.live.broadcast"][0]


def test_no_import_cycles_between_chatui_modules():
    top_level = {module: imports[0] for module, imports in GRAPH.items()}
    assert cycles(top_level) == []


def test_function_level_imports_are_only_the_listed_ones():
    found = {(module, target) for module, (_, inner) in GRAPH.items() for target in inner}
    assert found - set(ALLOWED_FUNCTION_IMPORTS) == set()


#: Past this many lines a module states why it is long, in its docstring.
LONG_MODULE_LINES = 500
LONG_MODULE_REASON = "Why it is long:"


#: Code outside the app held to the same rule: the client package and the benchmarks.
OTHER_CODE = (PACKAGE.parent / "clients" / "python", PACKAGE.parent / "bench")


def test_modules_over_500_lines_state_why_in_their_docstring():
    unexplained = []
    for folder in (PACKAGE, *OTHER_CODE):
        for path in sorted(folder.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            source = path.read_text()
            if source.count("\n") <= LONG_MODULE_LINES:
                continue
            docstring = ast.get_docstring(ast.parse(source)) or ""
            if LONG_MODULE_REASON not in docstring:
                where = path.relative_to(PACKAGE.parent)
                unexplained.append(f"{where} ({source.count(chr(10))} lines)")
    assert unexplained == []


# -- the layers -------------------------------------------------------------------------

#: The stages, lowest first. A module may import modules of its own layer and of the
#: layers below it, never above: the write path cannot reach the page, reads cannot
#: reach live delivery, and only the top knows the server.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # Plain rules every layer shares: settings' defaults, the JSON field, text hygiene
    # and secret masking (the index is written masked, so ingest needs them too).
    ("base", ("chatui", "chatui.conf", "chatui.fields", "chatui.text", "chatui.secrets")),
    ("db", ("chatui.db",)),
    ("models", ("chatui.models", "chatui.access")),
    ("ingest", ("chatui.ingest",)),
    # Agents and importers write through ingest and never read the page; the page
    # asks the agents whether a conversation takes input (read.pages), so they sit below.
    ("agents", ("chatui.agents", "chatui.importers")),
    ("read", ("chatui.read",)),
    ("live", ("chatui.live",)),
    ("web", ("chatui.web", "chatui.admin", "chatui.urls")),
    ("server", ("chatui.server", "chatui.asgi", "chatui.apps", "chatui.management")),
    ("outside", ("chatui.client",)),  # re-exports the runtime client; imports no stage
]

#: Imports against the order that are allowed, each with its reason. Empty is the goal.
ALLOWED_AGAINST_THE_ORDER: dict[tuple[str, str], str] = {}

#: Within `read`: queries never import the renderer (what both need lives below it).
READ_QUERIES = ("chatui.read.selectors", "chatui.read.search")
RENDERER = "chatui.read.presenters"


def layer_of(module: str) -> int:
    best, found = -1, None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), rank
    assert found is not None, f"{module} is in no layer: add it to LAYERS"
    return found


def against_the_order(graph: dict[str, tuple[set[str], set[str]]]) -> set[tuple[str, str]]:
    """Every (importer, imported) pair where the imported module sits in a higher layer,
    function-level imports included."""
    return {
        (module, target)
        for module, (top, inner) in graph.items()
        for target in top | inner
        if layer_of(target) > layer_of(module)
    }


def test_every_module_is_in_a_layer():
    for module in MODULES:
        layer_of(module)


def test_imports_follow_the_layer_order():
    found = (
        against_the_order(GRAPH) - set(ALLOWED_AGAINST_THE_ORDER) - set(ALLOWED_FUNCTION_IMPORTS)
    )
    assert found == set()


def test_a_wrong_way_import_fails_the_layer_check():
    """The check is real: the write path importing the page is caught."""
    graph = {module: (set(top), set(inner)) for module, (top, inner) in GRAPH.items()}
    graph["chatui.ingest.service"][0].add("chatui.read.presenters")
    graph["chatui.db.prepared"][1].add("chatui.web.views")
    assert {
        ("chatui.ingest.service", "chatui.read.presenters"),
        ("chatui.db.prepared", "chatui.web.views"),
    } <= against_the_order(graph)


def test_read_queries_never_import_the_renderer():
    for module in READ_QUERIES:
        top, inner = GRAPH[module]
        assert RENDERER not in top | inner, module


#: Besides the stage packages (ingest, read, live, web, server, db, admin, agents,
#: importers, management), at most this many modules at chatui's top level.
TOP_LEVEL_MODULES = 12


def test_chatui_top_level_holds_few_modules():
    modules = [path.name for path in PACKAGE.glob("*.py")]
    assert len(modules) <= TOP_LEVEL_MODULES, sorted(modules)


# -- libraries' private names --------------------------------------------------------

#: Underscored names that are Django's documented model API.
DOCUMENTED_UNDERSCORED = {"_meta", "_state", "_base_manager", "_default_manager"}
#: The packages that fence what chatui relies on below libraries' public APIs, each
#: reliance checked against the installed version (tests/db/test_internals.py, and the
#: server's own tests for daphne and Twisted).
FENCES = ("chatui.db", "chatui.server")
#: Hits outside the fences that are not a library's private name, with the reason.
NOT_A_LIBRARYS = {
    ("chatui.read.presenters", "tree._break_cycles"): "chatui's own _ToolTree",
}


def private_names(path: Path) -> set[str]:
    """What a module reaches that a library keeps private: `x._name` on anything but
    self/cls and chatui's own names, `__dict__`, getattr of an underscored name, and
    `from library import _name`."""
    tree = ast.parse(path.read_text())
    ours = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.level or (node.module or "").startswith("chatui"))
        for alias in node.names
    }
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            found.add(ast.unparse(node))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and node.attr not in DOCUMENTED_UNDERSCORED
        ):
            owner = node.value
            if isinstance(owner, ast.Name) and (owner.id in ("self", "cls") or owner.id in ours):
                continue
            found.add(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
            and not str(node.args[1].value).startswith("__")
        ):
            found.add(ast.unparse(node))
        elif (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and not (node.module or "").startswith("chatui")
        ):
            found |= {f"{node.module}.{a.name}" for a in node.names if a.name[0] == "_"}
    return found


def test_libraries_private_names_are_used_only_inside_the_fences():
    outside = {
        (module, name)
        for module, path in MODULES.items()
        if not module.startswith(FENCES)
        for name in private_names(path)
    }
    assert outside - set(NOT_A_LIBRARYS) == set()


def test_the_private_name_check_sees_a_reach_outside_the_fences(tmp_path):
    reach = tmp_path / "reach.py"
    reach.write_text(
        "import json.encoder\nimport threading\nfrom asyncio import _get_running_loop\n"
        "hook = getattr(threading, '_register_atexit', None)\n"
        "loop = json.encoder._make_iterencode\nvalues = object().__dict__\n"
    )
    assert private_names(reach) == {
        "asyncio._get_running_loop",
        "getattr(threading, '_register_atexit', None)",
        "json.encoder._make_iterencode",
        "object().__dict__",
    }


# -- the tests' own shape ------------------------------------------------------------

TESTS = Path(__file__).resolve().parent


def test_no_test_module_imports_another_test_module_or_a_conftest():
    """What several test modules share lives in tests/support/, not in a test module
    (importing one runs its module-level setup and hides what is shared)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                last = node.module.rsplit(".", 1)[-1]
                if node.module.startswith("tests") and (
                    last.startswith("test_") or last == "conftest"
                ):
                    found.append(f"{path.relative_to(TESTS)}: {node.module}")
    assert found == []


#: What only cluster mode needs (the `.[redis]` and `.[postgres]` extras): embedded mode,
#: `make test` and `make run`, must start and import every module without them.
CLUSTER_ONLY_PACKAGES = ("redis", "channels_redis", "psycopg", "psycopg_pool")

_WITHOUT_CLUSTER_PACKAGES = """
import importlib, pkgutil, sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {names!r}:
            raise ImportError(f"{{name}} is not installed (embedded mode)")
sys.meta_path.insert(0, Absent())
import django
django.setup()
import chatui
for module in pkgutil.walk_packages(chatui.__path__, "chatui."):
    if ".migrations." not in module.name:
        importlib.import_module(module.name)
print("imported")
"""


def test_embedded_mode_needs_none_of_the_cluster_extras():
    """A fresh clone's `make test` installs `.[test]` only: a module importing redis-py or
    psycopg at its top would stop Django from starting there (as the fan-out's first
    version did)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    script = _WITHOUT_CLUSTER_PACKAGES.format(names=set(CLUSTER_ONLY_PACKAGES))
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(chatui.__file__).parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr[-3000:]
