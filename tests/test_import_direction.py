"""The package's modules import one another one way: no module reaches itself through its imports.

Function-level imports count too (a lazy import is how a cycle usually hides).
Package ``__init__`` files are left out: they only re-export their modules.
"""

import ast
from pathlib import Path
from typing import Dict, List, Set

import geaet_dgl

ROOT = Path(geaet_dgl.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: Set[str]) -> Set[str]:
    """Modules of the package that ``path`` imports anywhere in its body."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & modules


def import_graph() -> Dict[str, Set[str]]:
    """``{module: modules it imports}`` over the package's modules (``__init__`` files excluded)."""
    paths = {_module_name(p): p for p in ROOT.rglob("*.py") if p.name != "__init__.py"}
    modules = set(paths)
    return {name: _imports(path, modules) - {name} for name, path in paths.items()}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_sees_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "geaet_dgl.training.distributed" in graph["geaet_dgl.training.trainer"]
    assert "geaet_dgl.training.trainer" in graph["geaet_dgl.training.launcher"]
    assert "geaet_dgl.data.dataset" in graph["geaet_dgl.data.superpixels.loader"]  # `from ..dataset import`


def test_no_module_imports_itself_through_others():
    assert cycles(import_graph()) == []


def test_training_runs_launcher_then_trainer_then_process_group_helpers():
    graph = import_graph()
    assert not graph["geaet_dgl.training.distributed"] & {"geaet_dgl.training.trainer", "geaet_dgl.training.launcher"}
    assert "geaet_dgl.training.launcher" not in graph["geaet_dgl.training.trainer"]
