"""Checkpoints both ways: ours -> the reference's format -> ours gives the same network; bad shapes refused."""
import os

import dgl
import pytest
import torch

from geaet_dgl.config import apply_overrides
from geaet_dgl.interop.reference_checkpoint import (MODEL_STATE, export_reference, import_reference,
                                                    read_reference_checkpoint)
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset
from geaet_dgl.scoring import evaluate_checkpoint
from geaet_dgl.training import CheckpointError, load_checkpoint
from geaet_dgl.config import DataOptions, RunConfig
from geaet_dgl.training.checkpoint import save_checkpoint
from geaet_dgl.training.schedule import build_optimizer, build_scheduler
from tests.conftest import random_graph, with_features
from tests.interop.test_reference_yaml import REFERENCE_YAML

REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/ref/GEAET")


def _our_run(tmp_path, name: str, seed: int = 0):
    """A best.pt of preset ``name`` with random weights and BatchNorm statistics: (path, model)."""
    preset = get_preset(name)
    torch.manual_seed(seed)
    model = build_model(preset.model)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
                module.num_batches_tracked.fill_(7)
    run = RunConfig(preset=name, model=preset.model, train=preset.train, data=DataOptions(dataset=preset.dataset))
    optimizer = build_optimizer(model.parameters(), 1e-3, 0.0)
    path = tmp_path / name / "best.pt"
    path.parent.mkdir(parents=True)
    save_checkpoint(path, run_config=run.to_dict(), model=model, optimizer=optimizer,
                    scheduler=build_scheduler(optimizer, 1, 3), epoch=4, step=0, global_step=40, best=None,
                    history=[], progress=None)
    return path, model


def _yaml(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(REFERENCE_YAML[name])
    return path


# Names read off the reference's modules (GEAET/network/GEAET.py, its encoders and heads, graphgym's MLP).
EXPECTED_REFERENCE_NAMES = {
    "mnist": ["model.encoder.node_encoder.encoder1.encoder.weight",
              "model.encoder.node_encoder.encoder2.linear_encoder_eigenvec.weight",
              "model.encoder.edge_encoder.encoder.weight", "model.layers.4.norm1_external.running_var",
              "model.layers.0.external_model.node_U1.weight",
              "model.post_mp.layer_post_mp.model.0.Layer_0.layer.model.weight",
              "model.post_mp.layer_post_mp.model.1.model.bias"],
    "pattern": ["model.encoder.node_encoder.linear_x.weight", "model.encoder.node_encoder.raw_norm.running_mean",
                "model.encoder.node_encoder.pe_encoder.weight", "model.layers.6.external_model.share_U.weight",
                "model.post_mp.layer_post_mp.model.0.Layer_1.layer.model.weight"],
    "peptides-struct": ["model.encoder.node_encoder.encoder1.atom_embedding_list.8.weight",
                        "model.encoder.node_encoder.encoder2.linear_A.weight",
                        "model.encoder.edge_encoder.bond_embedding_list.2.weight",
                        "model.layers.0.local_model.lin.weight", "model.post_mp.mlp.7.weight"],
    "voc": ["model.encoder.node_encoder.encoder.weight", "model.post_mp.layer_post_mp.model.1.model.weight",
            "model.encoder.node_encoder.node_x_mean", "model.encoder.edge_encoder.edge_x_std"],
    "coco": ["model.layers.7.norm2.weight", "model.post_mp.layer_post_mp.model.0.model.weight"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mnist", "cifar10", "pattern", "peptides-struct", "voc", "coco"])
def test_export_then_import_gives_the_same_network(tmp_path, name):
    ours, model = _our_run(tmp_path, name)
    exported = export_reference(ours)
    assert exported["path"].endswith(os.path.join("reference", "ckpt", "3.ckpt"))  # graphgym: 0-based epoch
    saved = torch.load(exported["path"], weights_only=True)[MODEL_STATE]
    assert set(EXPECTED_REFERENCE_NAMES.get(name, [])) <= set(saved)
    result = import_reference(exported["path"], _yaml(tmp_path, name), tmp_path / f"{name}-imported")
    state = load_checkpoint(result["checkpoint"])
    original = model.state_dict()
    assert list(state["model"]) == list(original)
    for key, tensor in original.items():
        assert torch.equal(state["model"][key], tensor), key
    assert result["params"] == get_preset(name).paper_params


@pytest.mark.slow
def test_imported_model_gives_the_same_outputs_and_eval_accepts_the_run(tmp_path):
    ours, model = _our_run(tmp_path, "mnist")
    result = import_reference(export_reference(ours)["path"], _yaml(tmp_path, "mnist"), tmp_path / "run")
    imported = build_model(get_preset("mnist").model)
    imported.load_state_dict(load_checkpoint(result["checkpoint"])["model"])
    batch = dgl.batch(with_features([random_graph(9, 30, 1), random_graph(6, 14, 2)], 8))
    with torch.no_grad():
        assert torch.equal(model.eval()(batch), imported.eval()(batch))
    # geaet-dgl eval rebuilds model and data from the run alone (here on synthetic MNIST-shaped graphs)
    scored = evaluate_checkpoint(result["checkpoint"], "test", {"dataset": "synthetic", "limit_test": 8},
                                 progress=False)
    assert scored["metric_name"] == "accuracy" and 0.0 <= scored["metric"] <= 1.0


def test_voc_input_statistics_are_checked_and_dropped(tmp_path):
    """The reference's VOC encoders carry their input normalisation as buffers; our loader applies the same."""
    ours, _ = _our_run(tmp_path, "voc")
    path = export_reference(ours)["path"]
    ckpt = torch.load(path, weights_only=True)
    assert torch.allclose(ckpt[MODEL_STATE]["model.encoder.edge_encoder.edge_x_mean"],
                          torch.tensor([0.07640745, 33.73478]))  # VOCEdgeEncoder's constants
    ckpt[MODEL_STATE]["model.encoder.edge_encoder.edge_x_mean"] = torch.tensor([0.0, 1.0])
    torch.save(ckpt, path)
    with pytest.raises(CheckpointError, match="buffer 'encoder.edge_encoder.edge_x_mean' normalises the inputs"):
        import_reference(path, _yaml(tmp_path, "voc"), tmp_path / "run")


def test_wrong_shape_is_refused_in_one_line_naming_the_parameter(tmp_path):
    ours, _ = _our_run(tmp_path, "mnist")
    path = export_reference(ours)["path"]
    ckpt = torch.load(path, weights_only=True)
    ckpt[MODEL_STATE]["model.layers.2.external_model.node_U2.weight"] = torch.zeros(11, 10)
    torch.save(ckpt, path)
    with pytest.raises(CheckpointError) as info:
        import_reference(path, _yaml(tmp_path, "mnist"), tmp_path / "run")
    message = str(info.value)
    assert "'layers.2.external_model.node_U2.weight'" in message and "(11, 10)" in message and "(10, 10)" in message
    assert "\n" not in message and not (tmp_path / "run").exists()  # nothing written


@pytest.mark.slow
def test_other_config_and_missing_tensors_are_refused(tmp_path):
    ours, _ = _our_run(tmp_path, "mnist")
    path = export_reference(ours)["path"]
    with pytest.raises(CheckpointError, match=r"'encoder.node_encoder.encoder1.encoder.weight' \(ours "
                                              r"'node_encoder.encoder.weight'\) has shape \(40, 3\).*\(40, 5\)"):
        import_reference(path, _yaml(tmp_path, "cifar10"), tmp_path / "run")  # 5 input features, not 3
    ckpt = torch.load(path, weights_only=True)
    del ckpt[MODEL_STATE]["model.layers.0.ff_linear1.bias"]
    torch.save(ckpt, path)
    with pytest.raises(CheckpointError, match="lacks parameter 'layers.0.ff_linear1.bias'"):
        import_reference(path, _yaml(tmp_path, "mnist"), tmp_path / "run")
    torch.save({"state_dict": {}}, tmp_path / "other.ckpt")
    with pytest.raises(CheckpointError, match="not a graphgym checkpoint"):
        read_reference_checkpoint(tmp_path / "other.ckpt")


def test_export_refuses_what_the_reference_cannot_compute(tmp_path):
    preset = get_preset("mnist")
    paper = apply_overrides(preset, {"model.geanet.variant": "paper"})
    model = build_model(paper.model)
    run = RunConfig(preset="mnist", model=paper.model, train=paper.train, data=DataOptions())
    optimizer = build_optimizer(model.parameters(), 1e-3, 0.0)
    path = tmp_path / "best.pt"
    save_checkpoint(path, run_config=run.to_dict(), model=model, optimizer=optimizer,
                    scheduler=build_scheduler(optimizer, 1, 3), epoch=1, step=0, global_step=1, best=None,
                    history=[], progress=None)
    with pytest.raises(CheckpointError, match="variant='paper'.*scope='graph'"):
        export_reference(path)


@pytest.mark.reference
def test_real_reference_checkpoint_imports_with_equal_outputs(tmp_path):
    """The reference model built in-process, saved by graphgym's own save_ckpt, imported: same outputs."""
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    import copy

    from geaet_lab.benchmarking.inputs import prebuilt_batches
    from geaet_lab.interop.pyg_export import to_pyg_batch
    from geaet_lab.interop.reference_model import load_reference_model

    reference = load_reference_model(REF_DIR, "mnist", seed=3).eval()
    from torch_geometric.graphgym import checkpoint as graphgym_checkpoint
    from torch_geometric.graphgym.config import cfg

    wrapper = torch.nn.Module()
    wrapper.model = reference  # graphgym's GraphGymModule holds the network as .model
    cfg.run_dir = str(tmp_path / "ref-run")
    graphgym_checkpoint.save_ckpt(wrapper, epoch=5)
    ckpt = tmp_path / "ref-run" / "ckpt" / "5.ckpt"
    result = import_reference(ckpt, os.path.join(REF_DIR, "configs/GEAET/mnist.yaml"), tmp_path / "run")
    ours = build_model(get_preset("mnist").model)
    ours.load_state_dict(load_checkpoint(result["checkpoint"])["model"])
    graph, labels = prebuilt_batches("mnist", 4, 1, torch.device("cpu"))[0][:2]
    with torch.no_grad():
        diff = (ours.eval()(graph) - reference(copy.copy(to_pyg_batch(graph, labels)))[0]).abs().max().item()
    assert diff < 1e-5


def _pretrained_folder(tmp_path, layout="0/ckpt", reset_head=False, epochs=(3, 41)):
    """GraphGPS's zinc-GPS+RWSE-inference.yaml and the pretrained folder it names (config.yaml, LAYOUT/<epoch>.ckpt),
    written from our model with random weights through the reference's names: (inference yaml, model)."""
    import yaml

    from geaet_dgl.interop.reference_yaml import read_reference_config
    from geaet_dgl.interop.reference_names import ours_to_reference
    from tests.commands.test_train_dry_run import CONFIGS

    folder = tmp_path / "pretrained" / "zinc-GPS+RWSE-ckptbest"
    (folder / layout).mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(CONFIGS["zinc-GPS+RWSE-ckptbest.yaml"]))
    tree = dict(CONFIGS["zinc-GPS+RWSE-inference.yaml"], pretrained={"dir": "pretrained/zinc-GPS+RWSE-ckptbest",
                                                                      "reset_prediction_head": reset_head})
    path = tmp_path / "zinc-GPS+RWSE-inference.yaml"
    path.write_text(yaml.safe_dump(tree))
    config, model = read_reference_config(path).preset.model, None
    for i, epoch in enumerate(epochs):  # GraphGPS loads the highest epoch
        torch.manual_seed(i)
        model = build_model(config)
        theirs = ours_to_reference(model.state_dict(), config)
        torch.save({MODEL_STATE: {"model." + k: v for k, v in theirs.items()}}, folder / layout / f"{epoch}.ckpt")
    return path, model


@pytest.mark.parametrize("layout", ["0/ckpt", "ckpt"])
def test_pretrained_folder_imports_its_last_checkpoint(tmp_path, layout):
    """GraphGPS's layout (<dir>/<seed>/ckpt/<epoch>.ckpt, loaded by init_model_from_pretrained) or a graphgym run
    folder (<dir>/ckpt/): the highest epoch, every tensor as saved (reset_prediction_head: false)."""
    path, model = _pretrained_folder(tmp_path, layout)
    result = import_reference(None, path, tmp_path / "run")
    assert result["epoch"] == 41 and not result["reset_head"]
    state = load_checkpoint(result["checkpoint"])["model"]
    for key, tensor in model.state_dict().items():
        assert torch.equal(state[key], tensor), key


def test_pretrained_folder_resets_the_prediction_head_as_graphgps_documents(tmp_path):
    path, model = _pretrained_folder(tmp_path, reset_head=True)
    result = import_reference(None, path, tmp_path / "run")
    state = load_checkpoint(result["checkpoint"])["model"]
    head = [key for key in state if key.startswith("head.")]
    assert head and result["reset_head"]
    for key, tensor in model.state_dict().items():
        if key.startswith("head.") and key.endswith("weight"):
            assert not torch.equal(state[key], tensor), key  # a fresh head ...
        elif not key.startswith("head."):
            assert torch.equal(state[key], tensor), key  # ... on the pretrained body


def test_pretrained_folder_without_a_checkpoint_is_refused_in_one_line(tmp_path):
    path, _ = _pretrained_folder(tmp_path, epochs=())
    with pytest.raises(CheckpointError, match=r"holds no <epoch>\.ckpt in 0/ckpt/ or ckpt/"):
        import_reference(None, path, tmp_path / "run")
    with pytest.raises(CheckpointError, match="names no pretrained.dir"):
        import_reference(None, _yaml(tmp_path, "mnist"), tmp_path / "run2")


@pytest.mark.reference
def test_pretrained_folder_saved_by_the_reference_imports_with_equal_outputs(tmp_path):
    """GraphGPS's pretrained folder written by the reference itself: its network built from the folder's
    config.yaml, saved by graphgym's save_ckpt into <dir>/0/ckpt/; imported through the *-inference.yaml: the
    same eval outputs (float64) on ZINC-shaped molecules (both reading our RWSE: the weights are under test)."""
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    import copy

    from geaet_lab.benchmarking.config_subject import config_subject
    from geaet_lab.benchmarking.parity import in_precision

    path, _ = _pretrained_folder(tmp_path, epochs=())
    folder = tmp_path / "pretrained" / "zinc-GPS+RWSE-ckptbest"
    subject = config_subject(folder / "config.yaml")
    reference = subject.reference_model(REF_DIR, seed=5)
    with torch.no_grad():  # BatchNorm statistics as after training
        for module in reference.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
    from torch_geometric.graphgym import checkpoint as graphgym_checkpoint
    from torch_geometric.graphgym.config import cfg

    wrapper = torch.nn.Module()
    wrapper.model = reference  # graphgym's GraphGymModule holds the network as .model
    cfg.run_dir = str(folder / "0")
    graphgym_checkpoint.save_ckpt(wrapper, epoch=12)
    result = import_reference(None, path, tmp_path / "run")
    assert result["epoch"] == 12
    ours = build_model(subject.model)
    ours.load_state_dict(load_checkpoint(result["checkpoint"])["model"])
    graph, labels = subject.batches(4, 1)[0]
    subject.reference_cfg = None  # the batch carries our statistics, not the reference's recomputed ones
    batch = in_precision(subject.pyg_batch(graph, labels), torch.float64)
    ours, reference = ours.double().eval(), reference.double().eval()
    with torch.no_grad():
        diff = (ours(in_precision(graph, torch.float64)) - reference(copy.copy(batch))[0]).abs().max().item()
    assert diff < 1e-10


@pytest.mark.slow
def test_train_inference_only_file_imports_the_pretrained_folder_and_scores_it(tmp_path):
    """train --config FILE with pretrained.dir and train.mode inference-only: nothing trained, the folder's
    checkpoint is the run's best.pt and the validation and test splits are scored (synthetic MNIST-shaped)."""
    import shutil

    import yaml
    from click.testing import CliRunner

    from geaet_dgl import cli

    ours, model = _our_run(tmp_path, "mnist")
    folder = tmp_path / "pretrained-mnist"
    (folder / "0" / "ckpt").mkdir(parents=True)
    shutil.copy(export_reference(ours)["path"], folder / "0" / "ckpt" / "3.ckpt")
    (folder / "config.yaml").write_text(REFERENCE_YAML["mnist"])
    tree = yaml.safe_load(REFERENCE_YAML["mnist"])
    tree["pretrained"] = {"dir": str(folder), "reset_prediction_head": False}
    tree.setdefault("train", {})["mode"] = "inference-only"
    path = tmp_path / "mnist-inference.yaml"
    path.write_text(yaml.safe_dump(tree))
    out = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--config", str(path), "--set", "data.dataset=synthetic",
                                           "--limit-val", "6", "--limit-test", "6", "--out", str(out),
                                           "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "imported the pretrained model" in result.output and "test: accuracy" in result.output
    state = load_checkpoint(out / "best.pt")
    assert state["epoch"] == 4 and not (out / "last.pt").exists()  # nothing trained
    for key, tensor in model.state_dict().items():
        assert torch.equal(state["model"][key], tensor), key


@pytest.mark.slow
def test_train_on_a_pretrained_folder_fine_tunes_its_model(tmp_path):
    """train --config FILE with pretrained.dir and train.mode custom: the run starts from the folder's checkpoint
    (imported to OUT-pretrained/best.pt); freeze_main trains the fresh head only (reset_prediction_head)."""
    import shutil

    import yaml
    from click.testing import CliRunner

    from geaet_dgl import cli

    ours, model = _our_run(tmp_path, "mnist", seed=7)  # not the file's seed 0: a fresh head differs
    folder = tmp_path / "pretrained-mnist"
    (folder / "0" / "ckpt").mkdir(parents=True)
    shutil.copy(export_reference(ours)["path"], folder / "0" / "ckpt" / "3.ckpt")
    (folder / "config.yaml").write_text(REFERENCE_YAML["mnist"])
    tree = yaml.safe_load(REFERENCE_YAML["mnist"])
    tree["pretrained"] = {"dir": str(folder), "reset_prediction_head": True, "freeze_main": True}
    path = tmp_path / "mnist-finetune.yaml"
    path.write_text(yaml.safe_dump(tree))
    out = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--config", str(path), "--set", "data.dataset=synthetic",
                                           "--limit-train", "8", "--limit-val", "4", "--limit-test", "4",
                                           "--epochs", "1", "--batch-size", "4", "--set", "train.warmup_epochs=0",
                                           "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "fine-tuning the pretrained model (reference epoch 3, a fresh prediction head, the rest frozen)" \
        in result.output
    start = load_checkpoint(tmp_path / "run-pretrained" / "best.pt")["model"]
    trained = load_checkpoint(out / "last.pt")
    assert trained["run_config"]["train"]["pretrained"] == str(tmp_path / "run-pretrained" / "best.pt")
    params = dict(model.named_parameters())
    for name in params:
        if name.startswith("head."):  # the fresh head, then trained
            assert not torch.equal(start[name], params[name]) and not torch.equal(trained["model"][name], start[name])
        else:  # the pretrained body, frozen
            assert torch.equal(trained["model"][name], params[name]), name
