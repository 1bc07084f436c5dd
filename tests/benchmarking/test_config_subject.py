"""``benchmark --against-pyg REF_DIR --config FILE.yaml``: the graphs, the reference's view of a GraphGPS file, and
(where the reference is installed) parity for every benchmark config and GraphGPS's own MNIST/PATTERN files."""
import importlib.util
import os
from pathlib import Path

import pytest
import torch
import yaml

from geaet_lab.benchmarking import run_benchmark
from geaet_lab.benchmarking.jobs import ModelJob, Reference, ScalingJob, Timing
from geaet_lab.benchmarking.config_subject import config_subject
from geaet_lab.benchmarking.inputs import UnsupportedPreset
from geaet_lab.benchmarking.throughput import ours_forward
from geaet_dgl.models import build_model
from geaet_lab.interop.reference_model import as_reference_geaet
from geaet_dgl.config import ConfigError

CONFIGS = Path(__file__).resolve().parents[2] / "benchmarks" / "configs"
GRAPHGPS = yaml.safe_load((Path(__file__).resolve().parents[1] / "interop" / "graphgps_configs.yaml").read_text())
REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/GEAET")


def test_graphs_carry_exactly_the_encodings_the_model_reads():
    subject = config_subject(CONFIGS / "pattern-GPS+GraphormerBias.yaml")
    assert (subject.dataset, subject.model.attention, subject.dim_in, subject.dim_out) == \
        ("pattern", "biased_transformer", 3, 1)
    graph, labels = subject.batches(3, 1)[0]
    assert {"spatial_types", "in_degree", "out_degree"} <= set(graph.ndata) and "rwse" not in graph.ndata
    assert labels.shape[0] == graph.num_nodes()
    signnet = config_subject(CONFIGS / "mnist-GPS+SignNet.yaml")
    graph, _ = signnet.batches(2, 1)[0]
    assert graph.ndata["lap_pe"].shape[1] == signnet.model.pe_k == 8 and "rwse" not in graph.ndata


def test_graphgps_file_becomes_the_reference_geaet_network_without_external_branch():
    tree = as_reference_geaet(GRAPHGPS["zinc-GPS+RWSE.yaml"])
    assert tree["model"]["type"] == "GEAET" and tree["gt"]["layer_type"] == "GINE+Transformer+None"
    assert "dropout" not in tree["gt"] and tree["gt"]["ffn_dropout"] == tree["gt"]["local_dropout"] == 0.0
    assert GRAPHGPS["zinc-GPS+RWSE.yaml"]["model"]["type"] == "GPSModel"  # the input is left as it was


def test_config_times_alone_and_needs_a_generated_dataset(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="use it with no other job"):
        run_benchmark(ModelJob(batch_sizes=(2,), scaling=ScalingJob(),
                               reference=Reference(str(REF_DIR), config_file=str(CONFIGS / "mnist-GPS-GAT.yaml"))),
                      echo=None)
    path = tmp_path / "zinc-GPS.yaml"
    path.write_text(yaml.safe_dump(GRAPHGPS["zinc-GPS.yaml"]))
    # without the reference: our model of the file, on ZINC-shaped graphs, in the step table
    report = run_benchmark(ModelJob(batch_sizes=(2,), config_file=str(path),
                                    timing=Timing(repeats=1, warmup=0, num_batches=1, threads=1, isolate=False)),
                           echo=None)
    (row,) = report["results"]
    assert report["config"]["preset"] == "zinc-GPS.yaml" and report["config"]["config_file"] == str(path)
    assert row["num_parameters"] == sum(p.numel() for p in build_model(config_subject(path).model).parameters())
    assert 9 * 2 <= row["nodes_per_batch"] <= 37 * 2 and row["train_graphs_per_s"] > 0
    assert config_subject(path).dataset == "zinc"
    from geaet_lab.benchmarking import config_subject as module

    monkeypatch.setattr(module, "BENCHMARK_DATASETS", ("mnist",))
    with pytest.raises(UnsupportedPreset, match="dataset 'zinc' has no synthetic graph generator"):
        config_subject(path)


def _first_file_of_each_dataset():
    """One GraphGPS file per dataset it names (the two that need a pretrained run folder left out)."""
    chosen = {}
    for name in sorted(GRAPHGPS):
        if "pretrained" not in GRAPHGPS[name]:
            dataset = GRAPHGPS[name]["dataset"]
            chosen.setdefault((dataset.get("format"), dataset.get("name")), name)
    return sorted(chosen.values())


@pytest.mark.parametrize("name", _first_file_of_each_dataset())
def test_every_graphgps_dataset_gets_graphs_and_trains_a_step(name, tmp_path):
    """GraphGPS's files of every dataset: graphs shaped like it, with the encodings its model reads, on which one
    training step of the file's model runs (a node set: its one graph, the loss on the train_mask nodes)."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(GRAPHGPS[name]))
    subject = config_subject(path)
    (graph, labels), = subject.batches(2, 1, max_nodes=40)
    model = build_model(subject.model)
    if subject.model.pe in ("lappe", "eslappe", "signnet"):
        assert graph.ndata["lap_pe"].shape[1] == subject.model.pe_k
    if subject.model.pe == "rwse" or subject.model.se == "rwse":
        assert graph.ndata["rwse"].shape[1] >= 1
    output, target = ours_forward(model, (graph, labels))
    loss = subject.loss()(output, target)
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_molecule_files_get_molecules_in_their_vocabularies(tmp_path):
    """ZINC's and molhiv's synthetic molecules: integer atoms and bonds inside the file's vocabularies, both bond
    directions, the encodings the file's model reads (LapPE and RWSE together; Graphormer's paths)."""
    for name, enc in (("ogbg-molhiv-GPS.yaml", {"lap_pe"}), ("zinc-GPS-LapPE+RWSE.yaml", {"lap_pe", "rwse"}),
                      ("zinc-GPSwGraphormer+VN.yaml", {"spatial_types", "path_types", "in_degree"})):
        path = tmp_path / name
        path.write_text(yaml.safe_dump(GRAPHGPS[name]))
        subject = config_subject(path)
        graph, labels = subject.batches(4, 1)[0]
        model = subject.model
        assert enc <= set(graph.ndata) and labels.shape == (4,)
        vocab = torch.tensor(model.node_vocab_sizes)
        assert graph.ndata["feat"].shape[1] == len(vocab) and bool((graph.ndata["feat"] < vocab).all())
        assert bool((graph.edata["feat"] < torch.tensor(model.edge_vocab_sizes)).all())
        src, dst = graph.edges()
        assert graph.has_edges_between(dst, src).all()
        if importlib.util.find_spec("torch_geometric") is None:
            continue
        pyg = subject.pyg_batch(graph, labels)
        assert pyg.edge_attr.shape == ((graph.num_edges(),) if model.edge_encoder == "typedict"
                                       else (graph.num_edges(), 3))


@pytest.mark.parametrize("name", sorted(p.name for p in CONFIGS.glob("*.yaml")) + [
    "mnist-GPS.yaml", "pattern-GPS-ESLapPE.yaml", "ogbg-molhiv-GPS.yaml", "zinc-GPS-LapPE+RWSE.yaml",
    "zinc-GPSwGraphormer+VN.yaml", "mnist-GPS.yaml:PNA+Transformer"])
@pytest.mark.reference
def test_parity_against_the_reference(name, tmp_path):
    """Parity in float64 under 1e-5 on 16 graphs (outputs and gradient entries under 1e-10); GraphGPS's files (``FILE:LAYER_TYPE``: its gt.layer_type replaced) get
    what the reference's loader computes (PNA's degree histogram: GraphGPS's mnist file gives none)."""
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    from geaet_lab.benchmarking.against_pyg import compare_with_reference

    name, _, layer_type = name.partition(":")
    path = CONFIGS / name
    if not path.is_file():  # one of GraphGPS's own files
        tree = GRAPHGPS[name]
        if layer_type:
            tree = dict(tree, gt=dict(tree["gt"], layer_type=layer_type))
            assert not tree["gt"].get("pna_degrees")
        path = tmp_path / name
        path.write_text(yaml.safe_dump(tree))
    out = compare_with_reference(Reference(REF_DIR, config_file=str(path)), batch_sizes=(16,),
                                 timing=Timing(repeats=1, warmup=0, threads=1, num_batches=1, min_time=0.0))
    assert out["parity"]["checked_diff"] < 1e-5 and out["parity"]["dtype"] == "float64"
    assert out["parity"]["max_abs_diff"] < 1e-10  # on 16 graphs, the float32 statistics (RWSE) shared
    model = config_subject(path).model
    if "rwse" in (model.pe, model.se):  # beside it, the comparison on the reference's own float32 RWSE
        own = out["parity_reference_statistics"]
        assert own["fields"] == ["pestat_RWSE"] and 0 < own["input_max_abs_diff"] < 1e-6
    unread = model.graphormer.spatial_types * model.num_heads ** 2 \
        if model.attention == "biased_transformer" and not model.graphormer.num_edge_types else 0
    assert out["parity"]["params_ours"] + unread == out["parity"]["params_reference"]  # its unread edge-path table
    assert out["results"][0]["ratio_train"] > 0


def test_a_node_set_under_dense_attention_is_generated_at_the_attentions_limit(tmp_path, monkeypatch):
    """GraphGPS's actor-GPS.yaml attends over the whole graph (Transformer): its synthetic Actor graph has at most
    MAX_DENSE_NODES nodes (7,600 otherwise), so the step runs instead of the attention's refusal."""
    from geaet_lab.benchmarking import config_subject as module

    path = tmp_path / "actor-GPS.yaml"
    path.write_text(yaml.safe_dump(GRAPHGPS["actor-GPS.yaml"]))
    subject = config_subject(path)
    assert subject.model.attention == "transformer"
    monkeypatch.setattr(module, "MAX_DENSE_NODES", 50)
    (graph, labels), = subject.batches(16, 1)
    assert graph.num_nodes() == 50 and graph.batch_size == 1 and labels.shape == (50,)
    assert graph.ndata["feat"].shape[1] == 932
