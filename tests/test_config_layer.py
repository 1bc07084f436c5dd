"""The configuration sits below the data layer: ``config/`` imports neither torch nor ``geaet_dgl.data``.

Checked over every import statement of ``geaet_dgl/config/*.py`` (imports inside functions included): the
package reads the standard library, its own modules and :mod:`geaet_dgl.errors`, nothing else of the package
and nothing built on torch. What needs the data or torch sits where it is used (``data/run_settings.py``,
``data/model_fit.py``, ``training/new_run.py``, ``training/environment.py``).
"""
import ast
from pathlib import Path

import geaet_dgl

CONFIG = Path(geaet_dgl.__file__).parent / "config"
#: Third-party packages the configuration must not import (torch and what is built on it).
HEAVY = ("torch", "dgl", "numpy", "scipy")
#: The package's modules the configuration may import: itself and the error classes.
ALLOWED = ("geaet_dgl.config", "geaet_dgl.errors")


def config_imports(root: Path = CONFIG, package: str = "geaet_dgl.config"):
    """``(file name, imported module)`` for every import of every module of ``root`` (the package ``package``),
    relative ones made absolute; ``from . import x`` counts as ``package.x``."""
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                yield from ((path.name, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if not node.level:
                    yield path.name, node.module
                    continue
                base = ".".join(package.split(".")[: len(package.split(".")) - (node.level - 1)])
                if node.module:
                    yield path.name, f"{base}.{node.module}"
                else:
                    yield from ((path.name, f"{base}.{alias.name}") for alias in node.names)


def offending(imports):
    """The imports that break the layering: a heavy package, or a ``geaet_dgl`` module outside :data:`ALLOWED`."""
    bad = []
    for where, module in imports:
        top = module.split(".")[0]
        inside = module == "geaet_dgl" or module.startswith("geaet_dgl.")
        if top in HEAVY or (inside and not any(module == a or module.startswith(a + ".") for a in ALLOWED)):
            bad.append(f"{where}: {module}")
    return bad


def test_the_check_sees_torch_and_the_data_layer_in_any_import_form(tmp_path):
    (tmp_path / "bad.py").write_text("import torch.nn\nfrom ..data.nodes import node_sets\n"
                                     "def f():\n    from geaet_dgl.data import load_dataset\n")
    (tmp_path / "good.py").write_text("import os\nfrom ..errors import ConfigError\nfrom .model import ModelConfig\n")
    found = offending(config_imports(tmp_path))
    assert found == ["bad.py: torch.nn", "bad.py: geaet_dgl.data.nodes", "bad.py: geaet_dgl.data"]


def test_config_imports_neither_torch_nor_the_data_layer():
    assert len(list(CONFIG.glob("*.py"))) >= 7  # the package was found
    assert offending(config_imports()) == []


def test_config_has_no_import_hidden_in_a_string():
    """``importlib.import_module("geaet_dgl.data...")`` or ``__import__("torch")`` would dodge the check above."""
    for path in CONFIG.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__"):
                raise AssertionError(f"{path.name}: a dynamic import")
