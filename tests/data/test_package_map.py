"""The data package's docstring maps every module and sub-package, and each sub-package's maps its modules.

A newcomer reads ``geaet_dgl/data/__init__.py`` to find where a dataset or an
encoding lives; a module added without a line there is one they will not find.
"""

import ast
from pathlib import Path

import geaet_dgl.data

DATA = Path(geaet_dgl.data.__file__).parent


def _docstring(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def _contents(package: Path):
    modules = sorted(p.stem for p in package.glob("*.py") if p.name != "__init__.py")
    packages = sorted(p.name for p in package.iterdir() if (p / "__init__.py").is_file())
    return modules, packages


def test_the_data_docstring_names_every_top_level_module_and_sub_package():
    doc = _docstring(DATA)
    modules, packages = _contents(DATA)
    assert packages, "data/ has sub-packages by kind"
    assert [m for m in modules if f"``{m}``" not in doc] == []
    assert [p for p in packages if f"``{p}/``" not in doc] == []


def test_every_data_sub_package_docstring_names_its_modules():
    unmapped = []
    for package in sorted(p for p in DATA.iterdir() if (p / "__init__.py").is_file()):
        doc = _docstring(package)
        modules, _ = _contents(package)
        unmapped += [f"{package.name}/{m}" for m in modules if f":mod:`.{m}`" not in doc]
    assert unmapped == []
