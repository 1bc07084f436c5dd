"""The benchmark's synthetic graphs have the schema of the real loaders' graphs (keys, dtypes, widths, labels),
checked against each loader run on its fixture files; every preset and every dataset a ``--config`` file can name
has a generator, and one training step runs on each generated batch."""
import dgl
import pytest
import torch
import yaml

from geaet_lab.benchmarking.config_subject import BENCHMARK_DATASETS, config_subject
from geaet_lab.benchmarking.inputs import (SUPPORTED_PRESETS, is_transductive, loss_function, prebuilt_batches,
                                           synthetic_graphs)
from geaet_lab.benchmarking.throughput import ours_forward
from geaet_dgl.data import load_dataset
from geaet_dgl.interop.reference_yaml import DATASETS
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset, preset_names
from geaet_dgl.data.run_splits import data_pe_sizes
from tests.benchmarking.test_config_subject import GRAPHGPS
from tests.data.fixtures_dgl import write_sbm_fixture, write_zinc_fixture
from tests.data.fixtures_malnet import write_malnet_fixture
from tests.data.fixtures_ogbg import write_code2_fixture, write_molecule_fixture, write_ppa_fixture
from tests.data.fixtures_pcqm4mv2 import small_variants, write_pcqm4mv2_fixture
from tests.data.fixtures_pcqm_contact import write_pcqm_contact_fixture
from tests.data.fixtures_node_sets import write_node_set_fixture
from tests.data.fixtures_ogbn import write_ogbn_fixture
from tests.data.fixtures_peptides import accept_as_published, write_peptides_fixture
from tests.data.lrgb.test_data_lrgb_superpixels import write_superpixel_fixture


def _real_splits(name, tmp_path, monkeypatch):
    """The real loader on its fixture files, asked for the encodings the preset's model reads."""
    pe_k, rwse_k = data_pe_sizes(get_preset(name).model)
    if name == "zinc":
        write_zinc_fixture(tmp_path)
    elif name in ("pattern", "cluster"):
        write_sbm_fixture(name, tmp_path)
    elif name.startswith("peptides"):
        write_peptides_fixture(name, tmp_path)
        accept_as_published(monkeypatch, name, tmp_path)
    elif name in ("ogbg-molhiv", "ogbg-molpcba"):
        write_molecule_fixture(name, tmp_path)
    elif name == "ogbg-ppa":
        write_ppa_fixture(tmp_path)
    elif name == "ogbg-code2":
        write_code2_fixture(tmp_path)
    elif name == "pcqm4mv2":
        write_pcqm4mv2_fixture(tmp_path)
        small_variants(monkeypatch)
    elif name == "pcqm-contact":
        write_pcqm_contact_fixture(tmp_path)
    elif name == "malnet-tiny":
        write_malnet_fixture(tmp_path)
    else:
        write_superpixel_fixture(name, tmp_path)
    return load_dataset(name, tmp_path, pe_k=pe_k, rwse_k=rwse_k, progress=False)


def _schema(frame):
    """``{field: (dtype, trailing shape)}``; the empty (N, 0) encodings a loader attaches when none is asked are left out."""
    return {key: (value.dtype, tuple(value.shape[1:])) for key, value in frame.items() if value.shape[1:] != (0,)}


#: the datasets with fixture files for their real loader (tests/data/fixtures_*.py)
WITH_FIXTURES = ["zinc", "cluster", "pattern", "peptides-func", "peptides-struct", "voc", "coco", "ogbg-molhiv",
                 "ogbg-molpcba", "ogbg-ppa", "ogbg-code2", "pcqm4mv2", "pcqm-contact", "malnet-tiny"]


@pytest.mark.parametrize("name", WITH_FIXTURES)
def test_synthetic_graphs_have_the_real_loaders_schema(name, tmp_path, monkeypatch):
    real = _real_splits(name, tmp_path, monkeypatch).train
    synthetic = synthetic_graphs(name, 3, seed=1, max_nodes=60)
    assert synthetic.level == real.level
    real_graph, real_labels = real[0]
    graph, labels = synthetic[0]
    assert _schema(graph.ndata) == _schema(real_graph.ndata)
    assert _schema(graph.edata) == _schema(real_graph.edata)
    assert labels.dtype == real_labels.dtype
    if name == "ogbg-code2":  # 5 training ids, then the longest name of the set (NaN-padded): widths differ
        assert labels.shape[0] > 5 and real_labels.shape[0] > 5
    else:
        assert labels.shape[1:] == real_labels.shape[1:]
    if real.level == "node":
        assert labels.shape[0] == graph.num_nodes()
    if real.level == "link":  # (P, 2) pairs of distinct nodes of the graph, both directions
        assert labels.shape[1] == 2 and int(labels.max()) < graph.num_nodes()
        assert not torch.any(labels[:, 0] == labels[:, 1])
        assert {tuple(p) for p in labels.tolist()} == {tuple(p) for p in labels.flip(1).tolist()}
    model = get_preset(name).model
    if model.node_encoder in ("embedding", "ast"):  # integer features inside the preset's vocabularies
        for feat, sizes in ((graph.ndata["feat"], model.node_vocab_sizes), (graph.edata["feat"], model.edge_vocab_sizes)):
            assert torch.all((feat >= 0) & (feat < torch.tensor(sizes)))
    src, dst = graph.edges()
    if name == "malnet-tiny":  # directed calls and a self-loop on some functions, as the loader keeps them
        assert graph.in_degrees().add(graph.out_degrees()).min() > 0  # isolated functions dropped
    elif name == "ogbg-code2":  # AST, inverse and next-token edges: every edge has its reverse
        assert graph.has_edges_between(dst, src).all()
    else:
        assert not torch.any(src == dst) and graph.has_edges_between(dst, src).all()  # undirected, no loops
    # the preset's model runs on a batch of them, and its loss reads their labels
    (batch, batch_labels), = prebuilt_batches(name, 2, 1, torch.device("cpu"), max_nodes=60)
    output = build_model(model)(batch)
    assert torch.isfinite(loss_function(name)(output, batch_labels))


def test_synthetic_shapes_follow_the_datasets_sizes():
    zinc = synthetic_graphs("zinc", 40, seed=0)
    nodes = torch.tensor([g.num_nodes() for g in zinc.graphs], dtype=torch.float)
    edges = torch.tensor([g.num_edges() for g in zinc.graphs], dtype=torch.float)
    assert 9 <= nodes.min() and nodes.max() <= 37 and 18 < nodes.mean() < 28  # ZINC: 9-37 atoms, mean 23.2
    assert 2.0 < (edges / nodes).mean() < 2.3  # ZINC: 49.8 directed bonds over 23.2 atoms
    voc = synthetic_graphs("voc", 4, seed=0)
    degree = sum(g.num_edges() for g in voc.graphs) / sum(g.num_nodes() for g in voc.graphs)
    assert 4.5 < degree < 7  # PascalVOC-SP (SLIC 30, region boundary): 5.65 edges per superpixel
    coco_labels = synthetic_graphs("coco", 4, seed=0).labels
    assert int(coco_labels.max()) <= 80 and len(coco_labels.unique()) > 60


def test_every_dataset_a_config_can_name_has_a_generator():
    """Every dataset of the reference's and GraphGPS's configs, and every preset's."""
    assert {spec.name for spec in DATASETS.values()} <= set(BENCHMARK_DATASETS)
    assert set(preset_names()) <= set(SUPPORTED_PRESETS)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_trains_a_step_on_its_generated_batch(name):
    """One optimisation step of the preset's model on a small generated batch: the loss is finite, every
    parameter the loss reaches gets a finite gradient, and the step moves the weights."""
    (batch, labels), = prebuilt_batches(name, 2, 1, torch.device("cpu"), max_nodes=40)
    if is_transductive(name):  # one graph with its three masks; the loss reads the train_mask nodes
        assert batch.batch_size == 1 and all(f"{s}_mask" in batch.ndata for s in ("train", "val", "test"))
    torch.manual_seed(0)
    model = build_model(get_preset(name).model)
    before = [p.detach().clone() for p in model.parameters()]
    output, target = ours_forward(model, (batch, labels))
    loss = loss_function(name)(output, target)
    assert torch.isfinite(loss)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))


@pytest.mark.parametrize("name", ["cora", "actor", "roman-empire", "amazon-photo", "wikics", "ogbn-arxiv"])
def test_node_set_graph_has_the_real_loaders_schema(name, tmp_path):
    """One graph with the masks, feature dtype, labels and (E, 1) edge column of the loader's NodeGraph (run on
    its fixture files); the widths, classes and size of the published set."""
    from geaet_lab.benchmarking.shapes import DATASET_SHAPES

    if name.startswith("ogbn"):
        write_ogbn_fixture(name, tmp_path)
    else:
        write_node_set_fixture(name, tmp_path)
    real = load_dataset(name, tmp_path, progress=False).graph
    data = synthetic_graphs(name, 5, seed=2, max_nodes=300)
    assert len(data) == 1 and data.level == "node"
    graph, labels = data[0]
    width = get_preset(name).model.node_in_feats  # the published set's; the fixture's is smaller
    assert _schema(graph.ndata) == _schema(real.ndata) | {"feat": (torch.float32, (width,))}
    assert _schema(graph.edata) == _schema(real.edata)
    assert labels.dtype == real.ndata["label"].dtype and labels.shape == (graph.num_nodes(),)
    assert int(labels.max()) < get_preset(name).model.out_feats
    masks = torch.stack([graph.ndata[f"{s}_mask"] for s in ("train", "val", "test")])
    assert masks.sum(0).max() == 1 and bool(masks.any(1).all())  # disjoint, none empty
    src, dst = graph.edges()
    assert not torch.any(src == dst) and graph.has_edges_between(dst, src).all()
    params = DATASET_SHAPES[name].params
    full = synthetic_graphs(name, 1) if params["num_nodes"] < 20_000 else None
    if full is not None:  # the published size: nodes, and directed edges within 10% (repeats dropped)
        g = full.graphs[0]
        assert g.num_nodes() == params["num_nodes"]
        assert 0.85 * params["num_edges"] < g.num_edges() <= params["num_edges"]


@pytest.mark.parametrize("name", ["zinc-GPSwGraphormer.yaml", "zinc-GPS+SNMLP.yaml"])
def test_graphgps_zinc_files_get_zinc_shaped_graphs_with_their_encodings(name, tmp_path):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(GRAPHGPS[name]))
    subject = config_subject(path)
    assert subject.dataset == "zinc"
    graph, labels = subject.batches(3, 1)[0]
    assert labels.shape == (3,) and graph.ndata["feat"].dtype == torch.int64
    if subject.model.attention == "biased_transformer":
        assert {"spatial_types", "in_degree", "out_degree"} <= set(graph.ndata)
    else:
        assert graph.ndata["lap_pe"].shape[1] == subject.model.pe_k
    for g in dgl.unbatch(graph):
        assert 9 <= g.num_nodes() <= 37
    model = build_model(subject.model)
    assert torch.isfinite(subject.loss()(model(graph), labels))
