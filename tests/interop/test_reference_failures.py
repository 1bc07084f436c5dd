"""A failure inside the reference's own code is one ``error:`` line that says so (no traceback of its code).

GraphGPS's ``zinc-GPS-ESLapPE.yaml`` asks the reference for ``GINEConvESLapPE``, whose ``__init__`` calls
``reset_parameters()`` before it defines ``mlp_r_ij``: the reference cannot build it. The first test stands a
fake graphgym in for the reference (no torch_geometric needed), its ``create_model`` raising what the real one
raises; the second runs the real reference where it is installed.
"""
import importlib.util
import os
import sys
import types
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from geaet_dgl.allocator import allocator_mode
from geaet_dgl import cli
from geaet_lab.interop import reference_model
from geaet_lab.interop.reference_model import ReferenceFailure, reference_failure

GRAPHGPS = yaml.safe_load((Path(__file__).resolve().parent / "graphgps_configs.yaml").read_text())
REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/GEAET")
ITS_BUG = "'GINEConvESLapPE' object has no attribute 'mlp_r_ij'"


def _fake_graphgym(monkeypatch, raised: Exception, merge_raises: Exception = None):
    """graphgym's config module and model builder, its ``create_model`` raising ``raised``; a yacs ``CfgNode``
    (merging raising ``merge_raises``, if given)."""

    def merge(other):
        if merge_raises is not None:
            raise merge_raises

    cfg = types.SimpleNamespace(share=types.SimpleNamespace(), merge_from_other_cfg=merge)
    config = types.SimpleNamespace(cfg=cfg, set_cfg=lambda c: None, assert_cfg=lambda c: None)

    def create_model(**kwargs):
        raise raised

    builder = types.SimpleNamespace(create_model=create_model)
    monkeypatch.setattr(reference_model, "import_reference_modules", lambda ref_dir: (config, builder))
    yacs = types.ModuleType("yacs")
    yacs.config = types.SimpleNamespace(CfgNode=dict)
    monkeypatch.setitem(sys.modules, "yacs", yacs)
    monkeypatch.setitem(sys.modules, "yacs.config", yacs.config)
    # The fake lives in this process: ask for the allocator mode it runs in, so that the comparison's first
    # batch size runs here (else every batch size would run in a fresh process, without the fake).
    monkeypatch.setenv("GEAET_DGL_ALLOCATOR", allocator_mode())


def _eslappe_file(tmp_path) -> Path:
    path = tmp_path / "zinc-GPS-ESLapPE.yaml"
    path.write_text(yaml.safe_dump(GRAPHGPS["zinc-GPS-ESLapPE.yaml"]))
    return path


def test_the_references_eslappe_gine_bug_is_one_line_naming_it(tmp_path, monkeypatch):
    _fake_graphgym(monkeypatch, AttributeError(ITS_BUG))
    (tmp_path / "ref" / "GEAET").mkdir(parents=True)
    result = CliRunner().invoke(cli.main, ["benchmark", "--against-pyg", str(tmp_path / "ref"), "--config",
                                           str(_eslappe_file(tmp_path)), "--batch-sizes", "16", "--threads", "1"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the reference cannot build the model of zinc-GPS-ESLapPE.yaml, a bug of "
                                                  "the reference: its GINEConvESLapPE")
    assert ITS_BUG in lines[0]
    assert "Traceback" not in result.output


def test_a_key_the_references_configuration_does_not_declare_is_one_line(tmp_path, monkeypatch):
    """yacs refuses a key its configuration does not declare (GEAET's own coco.yaml: train.eval_smoothing_metrics)."""
    _fake_graphgym(monkeypatch, AssertionError("not reached"),
                   merge_raises=KeyError("Non-existent config key: train.eval_smoothing_metrics"))
    (tmp_path / "ref" / "GEAET").mkdir(parents=True)
    result = CliRunner().invoke(cli.main, ["benchmark", "--against-pyg", str(tmp_path / "ref"), "--config",
                                           str(_eslappe_file(tmp_path)), "--batch-sizes", "16", "--threads", "1"])
    assert result.exit_code == 2, result.output
    assert result.output == ("error: the reference's own code failed building the model of zinc-GPS-ESLapPE.yaml "
                             "(KeyError: 'Non-existent config key: train.eval_smoothing_metrics'); run with --debug "
                             "for its traceback\n")


def test_another_failure_of_the_references_code_is_reported_as_its_own():
    error = reference_failure(KeyError("x"), "the model of f.yaml")
    assert isinstance(error, ReferenceFailure) and "a bug of the reference" not in str(error)
    assert str(error) == ("the reference's own code failed building the model of f.yaml (KeyError: 'x'); run "
                          "with --debug for its traceback")
    # an AttributeError of another attribute is not taken for the known bug
    assert "GINEConvESLapPE" not in str(reference_failure(AttributeError("no attribute 'lin'"), "f"))


@pytest.mark.reference
def test_the_real_reference_fails_on_eslappe_gine_in_one_line(tmp_path):
    if importlib.util.find_spec("torch_geometric") is None or not os.path.isdir(os.path.join(REF_DIR, "GEAET")):
        pytest.skip(f"needs torch_geometric and the reference checkout at {REF_DIR} (GEAET_REF_DIR)")
    result = CliRunner().invoke(cli.main, ["benchmark", "--against-pyg", REF_DIR, "--config",
                                           str(_eslappe_file(tmp_path)), "--batch-sizes", "16", "--threads", "1"])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "GINEConvESLapPE" in errors[0] and "a bug of the reference" in errors[0]
    assert "Traceback" not in result.output
