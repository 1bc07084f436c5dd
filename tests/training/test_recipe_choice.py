"""The node recipe a graph file gets without --preset: chosen on validation nodes only, the chosen run kept."""
import json

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.training import make_run_config
from geaet_dgl.data.generated.node_graphs import planted_partition
from geaet_dgl.training import recipe_choice
from geaet_dgl.training.recipe_choice import CANDIDATES, choose_node_recipe
from tests.training.tiny import one_thread

QUICK = {"train.epochs": "2", "model.hidden_dim": "8", "model.geanet.num_heads": "2"}


@pytest.fixture(scope="module")
def node_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("recipe") / "graph.bin"
    dgl.save_graphs(str(path), [planted_partition(120, 3, 0.08, 0.01, signal=1.0, seed=0)])
    return path


def _make(path, **extra):
    return lambda preset: make_run_config(str(path), preset, {**QUICK, **extra}, threads=1)


@pytest.mark.slow
def test_every_candidate_is_trained_and_the_best_validation_wins(node_file, tmp_path):
    with one_thread():
        choice = choose_node_recipe(node_file, _make(node_file), workdir=tmp_path)
    try:
        assert list(choice.scores) == list(CANDIDATES)
        best = max(choice.scores.values())
        assert choice.scores[choice.preset] == best
        assert choice.preset == next(p for p in CANDIDATES if choice.scores[p] == best)  # a tie keeps the earlier
        for preset, folder in choice.runs.items():
            summary = json.loads((folder / "summary.json").read_text())
            assert summary["val_metric"] == pytest.approx(choice.scores[preset])
            assert json.loads((folder / "config.json").read_text())["preset"] == preset
        assert choice.preset in choice.reason and "homophily" in choice.reason
        target = tmp_path / "taken"
        assert choice.take_run(target) and (target / "best.pt").is_file()
    finally:
        choice.discard()
    assert not choice.workdir.exists()


@pytest.mark.slow
def test_the_test_labels_are_never_read(tmp_path):
    graph = planted_partition(120, 3, 0.08, 0.01, signal=1.0, seed=1)
    scrambled = graph.clone()
    test = scrambled.ndata["test_mask"]
    scrambled.ndata["label"][test] = (scrambled.ndata["label"][test] + 1) % 3
    choices = []
    for name, g in (("a", graph), ("b", scrambled)):
        path = tmp_path / f"{name}.bin"
        dgl.save_graphs(str(path), [g])
        with one_thread():
            choice = choose_node_recipe(path, _make(path), workdir=tmp_path / name)
        choice.discard()
        choices.append((choice.preset, choice.scores, choice.homophily))
    assert choices[0] == choices[1]


def test_a_graph_too_large_to_probe_is_decided_by_its_homophily(node_file, monkeypatch):
    monkeypatch.setattr(recipe_choice, "MAX_PROBE_NODES", 10)
    trained = []
    choice = choose_node_recipe(node_file, lambda preset: trained.append(preset))
    assert trained == [] and choice.runs == {}
    assert choice.homophily > recipe_choice.HOMOPHILOUS_AT and choice.preset == "node-homophilous"
    mixed = planted_partition(120, 3, 0.01, 0.05, seed=0)
    path = node_file.parent / "mixed.bin"
    dgl.save_graphs(str(path), [mixed])
    assert choose_node_recipe(path, lambda preset: None).preset == "node-heterophilous"


@pytest.mark.slow
def test_a_candidate_that_diverges_is_left_out(node_file, tmp_path):
    def make(preset):
        lr = "1e30" if preset == "node-homophilous" else "0.01"
        return make_run_config(str(node_file), preset, {**QUICK, "train.lr": lr}, threads=1)

    with one_thread():
        choice = choose_node_recipe(node_file, make, workdir=tmp_path)
    choice.discard()
    assert "node-homophilous" not in choice.scores and choice.preset in CANDIDATES[1:]


def _train(args):
    with one_thread():
        return CliRunner().invoke(cli.main, ["train", *map(str, args), "--no-progress", "--threads", "1"])


@pytest.mark.slow
def test_train_on_a_file_without_preset_keeps_the_chosen_run_and_says_why(node_file, tmp_path):
    out = tmp_path / "run"
    result = _train(["--dataset", node_file, "--out", out, "--set", "train.epochs=2", "--set", "model.hidden_dim=8",
                     "--set", "model.geanet.num_heads=2"])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["preset"] in CANDIDATES
    assert f"recipe {config['preset']}: the highest validation accuracy" in result.stderr
    assert "epoch 1/2" not in result.stderr  # the candidates' epoch lines stay in their own logs
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".geaet-recipes-")]
    summary = json.loads((out / "summary.json").read_text())
    evaluated = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(out / "best.pt"), "--split", "val",
                                              "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(evaluated.stdout.strip().splitlines()[-1])["metric"] == pytest.approx(summary["val_metric"])
    again = _train(["--dataset", node_file, "--out", out, "--set", "train.epochs=2"])
    assert again.exit_code != 0 and "already exists" in again.output and "recipe" not in again.stderr


@pytest.mark.slow
@pytest.mark.parametrize("extra", [["--preset", "geaet-node"], ["--sampler", "cluster", "--set", "data.num_parts=4"]])
def test_a_named_preset_or_a_sampler_trains_without_a_choice(node_file, tmp_path, extra):
    out = tmp_path / "run"
    result = _train(["--dataset", node_file, "--out", out, "--set", "train.epochs=1", *extra])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "config.json").read_text())["preset"] == "geaet-node"
    assert "recipe node-" not in result.stderr


def test_dry_run_says_the_recipe_is_chosen_when_the_run_starts(node_file, tmp_path):
    chosen = _train(["--dataset", node_file, "--out", tmp_path / "run", "--dry-run"])
    named = _train(["--dataset", node_file, "--out", tmp_path / "run", "--dry-run", "--preset", "node-heterophilous"])
    assert chosen.exit_code == 0 and named.exit_code == 0, chosen.output + named.output
    assert "recipe: chosen when the run starts, on the validation nodes, among node-homophilous" in chosen.stdout
    assert "recipe:" not in named.stdout and not (tmp_path / "run").exists()
