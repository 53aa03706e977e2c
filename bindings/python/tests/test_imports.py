"""The package's modules import one another without a cycle: every import points down.

A cycle works only while each side defers its import to call time or hides it behind
TYPE_CHECKING, and breaks (a partially initialised module) as soon as someone moves one line.
So every import counts here, wherever it is written: at the top, inside a function, or under
``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
import pathlib

import mq

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[1] / "src" / "mq"


def modules(package_dir: pathlib.Path, package: str = "mq") -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name (the package itself as ``mq``)."""
    found = {}
    for path in sorted(package_dir.glob("*.py")):
        name = package if path.stem == "__init__" else f"{package}.{path.stem}"
        found[name] = path
    return found


def imports(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports (anywhere in its source)."""
    is_package = path.stem == "__init__"
    here = name if is_package else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # `from mq import _convert` imports the module mq._convert; `from mq import Broker`
            # imports the package (its __init__).
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a path whose first and last names are equal, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def import_graph() -> dict[str, set[str]]:
    mods = modules(PACKAGE_DIR)
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def test_the_source_is_the_package_under_test() -> None:
    # The graph must be of the modules that run: the installed package has the same ones.
    installed = {p.name for p in pathlib.Path(mq.__file__).parent.glob("*.py")}
    assert installed == {p.name for p in PACKAGE_DIR.glob("*.py")}


def test_the_modules_import_one_another_without_a_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 10, graph  # the package's modules were found
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_broker_sits_above_what_it_hands_out() -> None:
    # The layering the package keeps (its modules' docstrings): what holds a broker imports
    # the protocol in _handles, never _broker.
    graph = import_graph()
    assert {"mq._push", "mq._member", "mq._asyncio"} <= graph["mq._broker"]
    for low in ("mq._push", "mq._member", "mq._asyncio", "mq._handles"):
        assert "mq._broker" not in graph[low], low


def test_a_cycle_is_found_wherever_its_imports_are_written(tmp_path: pathlib.Path) -> None:
    # The detector itself: a cycle through a function-level import and a TYPE_CHECKING one.
    pkg = tmp_path / "mq"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from mq import _a\n")
    (pkg / "_a.py").write_text("def f():\n    from mq._b import g\n")
    (pkg / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import _a\n"
    )
    (pkg / "_c.py").write_text("import mq._b\nfrom mq import _a, something\n")
    mods = modules(pkg)
    graph = {name: imports(name, path, set(mods)) for name, path in mods.items()}
    assert graph == {
        "mq": {"mq._a"},
        "mq._a": {"mq._b"},
        "mq._b": {"mq._a"},
        "mq._c": {"mq._a", "mq._b", "mq"},
    }
    assert find_cycle(graph) == ["mq._a", "mq._b", "mq._a"]
    del graph["mq._b"]
    assert find_cycle(graph) is None
