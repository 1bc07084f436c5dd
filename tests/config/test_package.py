"""The configuration package: one home for the run's configuration, validation in one module, nothing pickled
by module path (so run directories written before the move still open)."""
import ast
import dataclasses
import io
import pickletools
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import geaet_dgl
import geaet_dgl.config as config
from geaet_dgl import errors
from geaet_dgl.config import ConfigError, DataOptions, ModelConfig, TrainConfig
from geaet_dgl.training import make_run_config
from geaet_dgl.config import validation
from geaet_dgl.data import run_settings
from geaet_dgl.data.run_splits import apply_feature_transforms, data_pe_sizes, structural_spec
from geaet_dgl.data.generated.synthetic import synthetic_splits
from tests.fixtures import FIXTURES

OLD_RUN = FIXTURES / "run-before-format-2"


def test_every_public_name_resolves_and_the_old_modules_are_gone():
    assert all(hasattr(config, name) for name in config.__all__)
    package = Path(geaet_dgl.__file__).parent
    for old in ("config.py", "presets.py", "training/run_config.py", "training/graph_file_run.py",
                "interop/reference_config.py"):
        assert not (package / old).exists(), old  # no shim left at an old path


def test_the_data_layer_raises_the_same_config_error():
    """``ConfigError`` lives below config and data: one class, whichever layer raises it."""
    assert config.ConfigError is errors.ConfigError and issubclass(config.OptionConflict, ConfigError)
    splits = synthetic_splits(num_train=4, num_val=2, num_test=2, pe_k=2, seed=0)
    with pytest.raises(config.ConfigError, match="data.feature_norm=row"):
        apply_feature_transforms(splits, "row")  # many graphs, not one graph with node masks


def test_validation_imports_no_configuration_dataclass():
    """The dataclasses call validation; validation reads them by their fields (no import back)."""
    tree = ast.parse(Path(validation.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 1}
    assert imported == set(), imported


def _dropout_paths(cls, prefix):
    for item in dataclasses.fields(cls):
        kind = item.default_factory if item.default_factory is not dataclasses.MISSING else None
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            yield from _dropout_paths(kind, f"{prefix}{item.name}.")
        elif "dropout" in item.name:
            yield prefix + item.name


def test_every_dropout_field_has_its_range():
    paths = set(_dropout_paths(ModelConfig, "model.")) | set(_dropout_paths(TrainConfig, "train."))
    assert len(paths) >= 9 and paths == {p for p in config.NUMERIC_RANGES if "dropout" in p}
    with pytest.raises(ConfigError, match="model.graphormer.input_dropout=1.5 is out of range"):
        dataclasses.replace(ModelConfig(), graphormer=config.GraphormerConfig(input_dropout=1.5)).validate()


def test_option_checks_take_their_defaults_from_the_options_class():
    run_settings.check_graph_file_options(DataOptions(dataset="mnist"))
    with pytest.raises(config.OptionConflict, match="--split-file apply only to a graph file"):
        run_settings.check_graph_file_options(DataOptions(dataset="mnist", split_file="s.json"))
    with pytest.raises(config.OptionConflict, match="--sampler"):
        run_settings.check_sampler_options(DataOptions(dataset="zinc", sampler="cluster"))


def test_the_node_presets_score_each_set_on_its_loaders_metric():
    """The presets know each named node set's metric without the data layer; the loaders' catalogue agrees."""
    from geaet_dgl.config.presets import NODE_DATASETS
    from geaet_dgl.data.nodes.node_sets import node_set_spec
    for name in NODE_DATASETS:
        assert config.get_preset(name).train.metric == node_set_spec(name).metric, name
    assert {config.get_preset(name).train.metric for name in NODE_DATASETS} == {"accuracy", "roc_auc"}


def test_data_sizes_read_a_model_config_or_a_number():
    model = ModelConfig(pe="lappe", pe_k=6, se="rwse", se_k=12)
    assert data_pe_sizes(model) == (6, 12)
    assert data_pe_sizes(dataclasses.replace(model, pe="rwse", se="none")) == (0, 6)
    assert data_pe_sizes(np.int64(4)) == (4, None) and data_pe_sizes(3) == (3, None)
    assert not structural_spec(5)
    spec = structural_spec(ModelConfig(pe="hkdiagse", pe_k=3))
    assert spec.hk_times == (1.0, 2.0, 3.0) and not spec.elstatic


def _pickled_globals(data: bytes):
    """The ``module name`` pairs a pickle stream imports (GLOBAL / STACK_GLOBAL opcodes)."""
    found, strings = [], []
    for opcode, arg, _ in pickletools.genops(io.BytesIO(data)):
        if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif opcode.name == "GLOBAL":
            found.append(arg)
        elif opcode.name == "STACK_GLOBAL":
            found.append(" ".join(strings[-2:]))
    return found


@pytest.mark.parametrize("source", ["old", "new"])
def test_checkpoints_pickle_no_class_of_the_package(tmp_path, source):
    """A checkpoint holds the run configuration as plain dicts (``weights_only`` loads it), so moving a
    configuration class cannot break an old run directory; ``config.json`` is JSON."""
    if source == "old":
        path = OLD_RUN / "last.pt"
    else:
        run = make_run_config("synthetic", overrides={"model.hidden_dim": 8, "model.num_layers": 1,
                                                      "model.geanet.unit_size": 2}, threads=1)
        from geaet_dgl.models import build_model
        from geaet_dgl.training import save_checkpoint
        from geaet_dgl.training.schedule import build_optimizer, build_scheduler

        model = build_model(run.model)
        optimizer = build_optimizer(model.parameters(), run.train.lr, run.train.weight_decay)
        path = tmp_path / "last.pt"
        save_checkpoint(path, run_config=run.to_dict(), model=model, optimizer=optimizer,
                        scheduler=build_scheduler(optimizer, run.train.warmup_epochs, run.train.epochs), epoch=0, step=0,
                        global_step=0, best=None, history=[], progress=None)
    with zipfile.ZipFile(path) as archive:
        data = archive.read(next(name for name in archive.namelist() if name.endswith("data.pkl")))
    assert not [name for name in _pickled_globals(data) if "geaet_dgl" in name]
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert isinstance(state["run_config"], dict)
    assert config.RunConfig.from_dict(state["run_config"]).model.hidden_dim == 8
