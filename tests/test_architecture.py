"""The package's shape (issue 10): no import cycles, no function-level imports that
hide a layering inversion, no module much over 500 lines without a stated reason.

The import graph is built from the source with `ast`, so it sees what a reader sees.
"""

from __future__ import annotations

import ast
from pathlib import Path

import chatui

PACKAGE = Path(chatui.__file__).parent

#: Function-level imports of chatui modules that are allowed, with the reason.
ALLOWED_FUNCTION_IMPORTS = {
    ("chatui.apps", "chatui.broadcast"): "AppConfig.ready is where Django connects signals",
    ("chatui.apps", "chatui.approval_clock"): "AppConfig.ready is where Django connects signals",
    ("chatui.apps", "chatui.revocation"): "AppConfig.ready is where Django connects signals",
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
    assert "chatui.selectors" in GRAPH["chatui.views"][0]
    assert "chatui.ingest" in GRAPH["chatui.broadcast"][0]


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
