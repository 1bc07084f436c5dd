"""The package's modules import one another one way: no module reaches itself through its imports.

Function-level imports count too (a lazy import is how a cycle usually hides).
Package ``__init__`` files are left out: they only re-export their modules.
The library (``geaet_dgl``) imports nothing of the lab (``geaet_lab``); the lab uses the library's public
names only and has no cycle of its own.
"""

import pytest
import ast
import functools
from pathlib import Path
from typing import Dict, List, Set

import geaet_dgl
import geaet_lab

ROOT = Path(geaet_dgl.__file__).parent
LAB = Path(geaet_lab.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_statements(path: Path):
    """``(target, name, from_module)`` for every import in ``path``'s body, relative ones made absolute:
    ``from target import name`` (``from_module`` False for ``from . import name``), ``import target`` (name None)."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield target, alias.name, node.module is not None
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, True


def _imports(path: Path, modules: Set[str]) -> Set[str]:
    """Modules of the package that ``path`` imports anywhere in its body."""
    found = set()
    for target, name, _ in _import_statements(path):
        submodule = f"{target}.{name}"
        found.add(submodule if name is not None and submodule in modules else target)
    return found & modules


def import_graph(root: Path = ROOT) -> Dict[str, Set[str]]:
    """``{module: modules it imports}`` over the modules of the package at ``root`` (``__init__`` files excluded)."""
    paths = {_module_name(p): p for p in root.rglob("*.py") if p.name != "__init__.py"}
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


@pytest.mark.slow
def test_the_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "geaet_dgl.training.distributed" in graph["geaet_dgl.training.trainer"]
    assert "geaet_dgl.training.trainer" in graph["geaet_dgl.training.launcher"]
    assert "geaet_dgl.data.dataset" in graph["geaet_dgl.data.superpixels.loader"]  # `from ..dataset import`


def test_no_module_imports_itself_through_others():
    assert cycles(import_graph()) == []


@pytest.mark.slow
def test_training_runs_launcher_then_trainer_then_process_group_helpers():
    graph = import_graph()
    assert not graph["geaet_dgl.training.distributed"] & {"geaet_dgl.training.trainer", "geaet_dgl.training.launcher"}
    assert "geaet_dgl.training.launcher" not in graph["geaet_dgl.training.trainer"]


# -- packages ------------------------------------------------------------------------------------------------------


def _package(module: str) -> str:
    """``geaet_dgl.training.trainer`` -> ``training``; a top-level module is its own package (``config``)."""
    return module.split(".")[1] if module.count(".") else module


@functools.lru_cache(maxsize=None)
def _known_modules() -> Set[str]:
    return {_module_name(p) for p in ROOT.rglob("*.py")}


def _targets(path: Path) -> Set[str]:
    """Every ``geaet_dgl`` module or package ``path`` imports anywhere (package ``__init__`` imports included)."""
    found = {target if from_module else f"{target}.{name}" for target, name, from_module in _import_statements(path)}
    return {name for name in found if name in _known_modules() and name != "geaet_dgl"}


def package_graph() -> Dict[str, Set[str]]:
    """``{package: packages it imports}`` over the package's sub-packages and top-level modules, every file
    (``__init__`` re-exports and imports inside functions included)."""
    graph: Dict[str, Set[str]] = {}
    for path in ROOT.rglob("*.py"):
        name = _module_name(path)
        if name == "geaet_dgl":
            continue
        own = _package(name)
        graph.setdefault(own, set()).update(_package(t) for t in _targets(path) if _package(t) != own)
    for imported in set().union(*graph.values()):
        graph.setdefault(imported, set())
    return graph


def test_the_package_graph_sees_imports_inside_functions_and_package_imports():
    graph = package_graph()
    assert "distributed" not in graph  # a module of training/, not a package
    assert "training" in graph["distgraph"]  # `from ..training import run_dir as files`
    assert "interop" in graph["commands"]  # imported inside the command functions
    assert {"training", "inference"} <= graph["scoring"]


@pytest.mark.slow
def test_no_package_imports_a_package_that_imports_it_back():
    assert cycles(package_graph()) == []


def test_folding_and_layerwise_inference_depend_only_on_nn_and_models():
    assert package_graph()["inference"] <= {"nn", "models", "config"}


def test_training_runs_no_scoring_and_scoring_sits_above_training_and_inference():
    graph = package_graph()
    assert "scoring" not in graph["training"] and "scoring" not in graph["inference"]


# -- private names -------------------------------------------------------------------------------------------------


def _defined_private(tree: ast.AST) -> Set[str]:
    """The ``_private`` names a module defines: functions, classes, variables and ``self._x`` attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {name for name in names if _is_private(name)}


def private_uses() -> List[str]:
    """``module: name`` for every ``_private`` name a module takes from another module of the package:
    ``from x import _name``, ``x._name`` on an imported module, and ``obj._name`` on any object when
    ``_name`` is defined by other modules of the package only (e.g. another class's private method)."""
    trees = {_module_name(p): (p, ast.parse(p.read_text())) for p in ROOT.rglob("*.py")}
    defined = {name: _defined_private(tree) for name, (_, tree) in trees.items()}
    uses = set()
    for name, (path, tree) in trees.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        elsewhere = set().union(*(names for other, names in defined.items() if other != name)) - defined[name]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.startswith("geaet_dgl"):
                    uses.update(f"{name}: {target}.{alias.name}" for alias in node.names if _is_private(alias.name))
            elif isinstance(node, ast.Attribute) and _is_private(node.attr) and node.attr in elsewhere:
                uses.add(f"{name}: .{node.attr}")
    return sorted(uses)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_the_private_name_finder_sees_what_a_module_defines():
    source = "def _f(): pass\nclass A:\n    def g(self):\n        self._x = 1"
    assert _defined_private(ast.parse(source)) == {"_f", "_x"}
    assert not _is_private("__init__") and _is_private("_classes")


@pytest.mark.slow
def test_no_module_uses_another_modules_private_names():
    assert private_uses() == []


# -- one loop ------------------------------------------------------------------------------------------------------


def optimizer_steppers() -> List[str]:
    """Modules of the library that call ``.step()`` on an optimiser: any ``X.step()`` whose
    ``X`` names an optimiser (``optimizer``, ``opt``, ``self.optimizer``, ...), docstrings aside."""
    found = []
    for path in ROOT.rglob("*.py"):
        name = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step":
                owner = node.func.value
                owner_name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
                if "opt" in owner_name.lower():
                    found.append(name)
    return sorted(set(found))


@pytest.mark.slow
def test_only_the_training_loop_steps_an_optimizer():
    assert optimizer_steppers() == ["geaet_dgl.training.trainer"]


# -- the library and the lab ---------------------------------------------------------------------------------------


def _docstrings(tree: ast.AST) -> Set[int]:
    """``id`` of every docstring node of ``tree`` (module, class and function docstrings)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def lab_references(source: str) -> List[str]:
    """What in ``source`` reaches the lab: ``import geaet_lab...``, ``from geaet_lab... import`` (at any depth:
    inside functions too), and strings outside docstrings naming a lab module (``importlib.import_module``'s)."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "geaet_lab"]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "geaet_lab":
            found.append(node.module)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and node.value.startswith("geaet_lab")):
            found.append(repr(node.value))
    return found


def library_references_to_the_lab() -> List[str]:
    """``module: what`` for everything of :func:`lab_references` in the library's files."""
    return sorted(f"{_module_name(path)}: {what}" for path in ROOT.rglob("*.py")
                  for what in lab_references(path.read_text()))


def test_the_lab_finder_sees_lazy_imports_and_module_names_in_strings():
    source = ('"""Docs may name geaet_lab."""\nimport os\n\ndef f():\n    """geaet_lab.x in a docstring."""\n'
              '    from geaet_lab.benchmarking import api\n    import geaet_lab.studies as s\n'
              '    return importlib.import_module("geaet_lab.commands.benchmark")\n')
    assert lab_references(source) == ["geaet_lab.benchmarking", "geaet_lab.studies", "'geaet_lab.commands.benchmark'"]
    assert lab_references("from geaet_dgl import cli\nx = 'the lab'\n") == []


@pytest.mark.slow
def test_the_library_imports_nothing_of_the_lab():
    assert library_references_to_the_lab() == []


def private_library_names(source: str) -> List[str]:
    """The ``_private`` names of ``geaet_dgl`` that ``source`` (a lab module) uses: ``from geaet_dgl.x import _y``,
    a ``_private`` module on the path (``geaet_dgl._x``), and ``y._z`` where ``y`` was imported from the library
    (a module, class or function of it)."""
    tree = ast.parse(source)
    found, bound = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "geaet_dgl":
            found += [f"{node.module}" for part in node.module.split(".") if _is_private(part)]
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{node.module}.{alias.name}")
                bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "geaet_dgl":
                    found += [alias.name for part in alias.name.split(".") if _is_private(part)]
                    bound.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = node.value
            while isinstance(owner, ast.Attribute):  # geaet_dgl.training.trainer._x: the chain's root name
                owner = owner.value
            if isinstance(owner, ast.Name) and owner.id in bound:
                found.append(f"{ast.unparse(node.value)}.{node.attr}")
    return found


def lab_private_uses() -> List[str]:
    """``module: name`` for every ``_private`` name of the library a lab module uses (:func:`private_library_names`)."""
    return sorted(f"{_module_name(path)}: {name}" for path in LAB.rglob("*.py")
                  for name in private_library_names(path.read_text()))


def test_the_lab_private_finder_sees_imports_and_attributes():
    source = ("from geaet_dgl.training import trainer, _helper\nimport geaet_dgl.data._cache as cache\n"
              "from geaet_dgl.models import build_model\n\ndef f(model):\n"
              "    trainer._loop()\n    model._own()\n    return build_model._x, cache\n")
    assert sorted(private_library_names(source)) == sorted([
        "geaet_dgl.training._helper", "geaet_dgl.data._cache", "trainer._loop", "build_model._x"])


def test_the_lab_uses_the_library_public_names_only():
    assert lab_private_uses() == []


def test_the_lab_has_no_import_cycle():
    graph = import_graph(LAB)
    assert "geaet_lab.interop.pyg_export" in graph["geaet_lab.benchmarking.parity"]  # relative, inside the lab
    assert cycles(graph) == []


def missing_modules(root: Path) -> List[str]:
    """``module: target`` for every import (relative ones resolved, inside functions too) of a ``geaet_dgl`` or
    ``geaet_lab`` module that no file or package holds: e.g. ``from ..config import x`` left in a module moved
    from the library into the lab (it would reach ``geaet_lab.config``)."""
    known = {_module_name(p) for top in (ROOT, LAB) for p in top.rglob("*.py")}
    found = set()
    for path in root.rglob("*.py"):
        for target, name, from_module in _import_statements(path):
            if target.split(".")[0] not in ("geaet_dgl", "geaet_lab"):
                continue
            if target not in known and not (not from_module and f"{target}.{name}" in known):
                found.add(f"{_module_name(path)}: {target}")
    return sorted(found)


@pytest.mark.slow
def test_every_import_of_the_library_and_the_lab_names_a_module_that_exists():
    assert missing_modules(ROOT) == [] and missing_modules(LAB) == []
