"""PascalVOC-SP / COCO-SP through DGL's real ``VOCSuperpixelsDataset`` / ``COCOSuperpixelsDataset``.

The fixture writes tiny ``{train,val,test}.pickle`` files in the raw format DGL
reads (lists of ``(x (N, 14), edge_attr (E, 2), edge_index (2, E), y (N,))``
tensors), so DGL's own processing (and COCO's label remap) runs on them.
"""
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from dgl.data import COCOSuperpixelsDataset, VOCSuperpixelsDataset

from geaet_dgl.data import DataError, LoadOptions, load_dataset
from geaet_dgl.data.lrgb.voc_coco import (SUPERPIXEL_TASKS, _offline, load_lrgb_superpixels, superpixel_files,
                                             superpixel_present)
from geaet_dgl.data.registry import DATASETS, dataset_table
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset
from geaet_dgl.training.losses import weighted_cross_entropy
from geaet_dgl.training.metrics import MetricAccumulator, f1_macro
from geaet_dgl.data.model_fit import check_data_fits
from geaet_dgl.data.registry import load_with

#: COCO 2017 category ids run 1..90 with these ten never used; 0 is background: 81 labels.
COCO_UNUSED_IDS = (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)
COCO_IDS = [0] + [c for c in range(1, 91) if c not in COCO_UNUSED_IDS]
SIZES = (4, 2, 2)


def _raw_graph(rng: np.random.Generator, labels: np.ndarray, label_dtype: torch.dtype, edge_feats: int = 2):
    """One superpixel graph as LRGB pickles it: float64 features, symmetric region adjacency."""
    n = labels.shape[0]
    adj = np.triu(rng.random((n, n)) < 0.35, 1)
    adj[np.arange(n - 1), np.arange(1, n)] = True  # a path, so every node has a neighbour
    src, dst = np.nonzero(adj | adj.T)
    x = np.concatenate([rng.random((n, 12)), rng.uniform(0, 500, (n, 2))], axis=1)  # RGB stats, centroid
    edge_attr = np.stack([rng.random(src.shape[0]), rng.uniform(1, 80, src.shape[0])], axis=1)[:, :edge_feats]
    return (torch.from_numpy(x), torch.from_numpy(edge_attr), torch.from_numpy(np.stack([src, dst])).long(),
            torch.from_numpy(labels).to(label_dtype))


def write_superpixel_fixture(name: str, data_dir: Path, sizes=SIZES, seed: int = 0, edge_feats: int = 2) -> dict:
    """``{split: [raw tuples]}`` written to the pickles DGL reads for ``name`` ('voc' or 'coco').

    VOC labels are int32 in 0..20; COCO labels are uint8 COCO category ids,
    every one of the 81 used ids appearing in the train split.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for (split, path), count in zip(superpixel_files(name, data_dir).items(), sizes):
        graphs = []
        for index in range(count):
            if name == "voc":
                labels, dtype = rng.integers(0, 21, size=int(rng.integers(9, 15))), torch.int32
            elif split == "train":  # graph i carries ids 21i..21i+20 of the 81, then random ones
                own = COCO_IDS[21 * (index % 4):21 * (index % 4) + 21]
                labels, dtype = np.array(own + list(rng.choice(COCO_IDS, size=int(rng.integers(2, 5))))), torch.uint8
                labels = labels[rng.permutation(labels.shape[0])]
            else:
                labels, dtype = rng.choice(COCO_IDS, size=int(rng.integers(9, 15))), torch.uint8
            graphs.append(_raw_graph(rng, np.asarray(labels), dtype, edge_feats))
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            pickle.dump(graphs, handle)
        out[split] = graphs
    if name == "coco" and sizes[0] >= 4:
        train_labels = torch.cat([g[3] for g in out["train"]]).long().tolist()
        assert set(train_labels) == set(COCO_IDS)
    return out


def _coco_index(category: int) -> int:
    """Independent remap: a COCO id's rank among the used ids = id minus the unused ids below it."""
    return category - sum(gap < category for gap in COCO_UNUSED_IDS)


def _one_line_error(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def test_files_are_the_papers_configuration_where_dgl_reads_them(tmp_path):
    for name, cls in (("voc", VOCSuperpixelsDataset), ("coco", COCOSuperpixelsDataset)):
        files = superpixel_files(name, tmp_path)
        assert [p.name for p in files.values()] == ["train.pickle", "val.pickle", "test.pickle"]
        folder = files["train"].parent
        assert folder.parts[-2:] == ("slic_compactness_30", "edge_wt_region_boundary")
        assert folder.parts[-3].startswith(SUPERPIXEL_TASKS[name].title + "_")
        assert folder.parent.parent.parent == tmp_path.resolve()
        # DGL's defaults are the reference configs' slic_compactness 30 / edge_wt_region_boundary
        probe = type("Probe", (cls,), {"_load": lambda self: None})(raw_dir=str(tmp_path.resolve()), split="val")
        assert Path(probe.raw_data_path) == files["val"]


def test_voc_splits_features_labels_as_dgl_builds_them(tmp_path):
    raw = write_superpixel_fixture("voc", tmp_path)
    splits = load_lrgb_superpixels("voc", LoadOptions(data_dir=tmp_path, progress=False, standardize=False))
    assert (splits.name, splits.num_classes, splits.node_feat_dim, splits.edge_feat_dim) == ("voc", 21, 14, 2)
    for split, count in zip(("train", "val", "test"), SIZES):
        dataset = getattr(splits, split)
        assert len(dataset) == count and dataset.level == "node"
        for i, (x, edge_attr, edge_index, y) in enumerate(raw[split]):
            g, labels = dataset[i]
            assert g.ndata["feat"].dtype == torch.float32 and g.edata["feat"].dtype == torch.float32
            assert torch.equal(g.ndata["feat"], x.float()) and torch.equal(g.edata["feat"], edge_attr.float())
            src, dst = g.edges()
            assert torch.equal(torch.stack([src, dst]), edge_index)
            assert labels.dtype == torch.int64 and torch.equal(labels, y.long())
            assert "label" not in g.ndata and "lap_pe" not in g.ndata  # no PE unless asked for


def test_features_are_standardised_with_the_reference_statistics(tmp_path):
    raw = write_superpixel_fixture("voc", tmp_path)
    splits = load_lrgb_superpixels("voc", LoadOptions(data_dir=tmp_path, progress=False))
    x, edge_attr = raw["train"][0][0].float(), raw["train"][0][1].float()
    g = splits.train.graphs[0]
    # the reference's VOCNode / VOCEdge encoders: (x - mean) / std; e.g. centroid x mean 193.45, std 117.68
    assert torch.allclose(g.ndata["feat"][:, 12], (x[:, 12] - 1.9344997e+02) / 1.1768297e+02)
    assert torch.allclose(g.edata["feat"][:, 1], (edge_attr[:, 1] - 33.73478) / 20.945076)
    task = SUPERPIXEL_TASKS["voc"]
    assert torch.allclose(g.ndata["feat"] * torch.tensor(task.node_std) + torch.tensor(task.node_mean), x, atol=1e-4)
    assert len(task.node_mean) == len(task.node_std) == 14 and len(task.edge_mean) == len(task.edge_std) == 2


def test_coco_labels_are_remapped_by_dgl_onto_0_to_80(tmp_path):
    raw = write_superpixel_fixture("coco", tmp_path)
    splits = load_lrgb_superpixels("coco", LoadOptions(data_dir=tmp_path, progress=False))
    assert splits.num_classes == 81 and len(COCO_IDS) == 81
    for split in ("train", "val", "test"):
        expected = torch.tensor([_coco_index(int(c)) for graph in raw[split] for c in graph[3]])
        assert torch.equal(getattr(splits, split).labels, expected)
    assert torch.equal(torch.unique(splits.train.labels), torch.arange(81))
    # the second load reads DGL's processed cache: labels are not remapped twice
    assert superpixel_files("coco", tmp_path)["train"].with_name("processed_train.pkl").is_file()
    again = load_lrgb_superpixels("coco", LoadOptions(data_dir=tmp_path, progress=False))
    assert torch.equal(again.train.labels, splits.train.labels)


def test_limits_keep_the_first_graphs_with_their_own_labels(tmp_path):
    raw = write_superpixel_fixture("voc", tmp_path)
    splits = load_lrgb_superpixels("voc", LoadOptions(data_dir=tmp_path, limit_train=2, limit_val=1, limit_test=5,
                                                      progress=False))
    assert (len(splits.train), len(splits.val), len(splits.test)) == (2, 1, 2)
    for i in range(2):
        assert torch.equal(splits.train[i][1], raw["train"][i][3].long())
    assert splits.train.labels.shape[0] == sum(g[0].shape[0] for g in raw["train"][:2])


def test_laplacian_pe_only_when_asked(tmp_path):
    write_superpixel_fixture("voc", tmp_path)
    splits = load_with("voc", LoadOptions(data_dir=tmp_path, pe_k=3, rwse_k=4, progress=False))
    g = splits.val.graphs[1]
    assert g.ndata["lap_pe"].shape == (g.num_nodes(), 3) and g.ndata["rwse"].shape == (g.num_nodes(), 4)
    assert splits.pe_dim == 3


def test_random_walk_encoding_without_laplacian(tmp_path):
    """model.pe='rwse' asks for RWSE and no eigenvectors (pe_k=0): the walks must still come."""
    from geaet_dgl.data.encodings.positional_encoding import random_walk_se

    write_superpixel_fixture("voc", tmp_path)
    splits = load_with("voc", LoadOptions(data_dir=tmp_path, pe_k=0, rwse_k=4, progress=False))
    g = splits.val.graphs[1]
    assert torch.allclose(g.ndata["rwse"], random_walk_se(g, 4)) and g.ndata["lap_pe"].shape == (g.num_nodes(), 0)


@pytest.mark.parametrize("name", ["voc", "coco"])
def test_missing_files_are_a_one_line_error_naming_file_place_and_fix(tmp_path, name):
    with pytest.raises(DataError) as excinfo:
        load_lrgb_superpixels(name, LoadOptions(data_dir=tmp_path, progress=False))
    message = _one_line_error(excinfo)
    folder = superpixel_files(name, tmp_path)["train"].parent
    assert "train.pickle" in message and str(folder) in message and SUPERPIXEL_TASKS[name].archive in message
    write_superpixel_fixture(name, tmp_path, sizes=(2, 1, 1))
    superpixel_files(name, tmp_path)["test"].unlink()
    with pytest.raises(DataError) as excinfo:
        load_lrgb_superpixels(name, LoadOptions(data_dir=tmp_path, progress=False))
    message = _one_line_error(excinfo)
    assert "no test.pickle in" in message and "train.pickle" not in message


def test_dgl_download_hook_raises_instead_of_downloading(tmp_path):
    with pytest.raises(DataError) as excinfo:
        _offline("voc")(raw_dir=str(tmp_path), split="train", slic_compactness=30)
    assert "voc_superpixels_edge_wt_region_boundary.zip" in _one_line_error(excinfo)


def test_corrupt_pickle_is_a_one_line_error(tmp_path):
    write_superpixel_fixture("voc", tmp_path, sizes=(2, 1, 1))
    bad = superpixel_files("voc", tmp_path)["val"]
    bad.write_bytes(b"\x80\x04not a pickle at all")
    with pytest.raises(DataError) as excinfo:
        load_lrgb_superpixels("voc", LoadOptions(data_dir=tmp_path, progress=False))
    message = _one_line_error(excinfo)
    assert str(bad) in message and "replace it" in message


def test_unknown_coco_category_is_a_one_line_error(tmp_path):
    write_superpixel_fixture("coco", tmp_path, sizes=(2, 1, 1))
    path = superpixel_files("coco", tmp_path)["test"]
    graphs = pickle.loads(path.read_bytes())
    graphs[0][3][0] = 12  # an id COCO never used: DGL's remap has no entry for it
    path.write_bytes(pickle.dumps(graphs))
    with pytest.raises(DataError) as excinfo:
        load_lrgb_superpixels("coco", LoadOptions(data_dir=tmp_path, progress=False))
    assert str(path) in _one_line_error(excinfo)


def test_wrong_graph_construction_is_refused(tmp_path):
    write_superpixel_fixture("voc", tmp_path, sizes=(2, 1, 1), edge_feats=1)  # edge_wt_only_coord: (E, 1)
    with pytest.raises(DataError, match=r"expected \(E, 2\)"):
        load_lrgb_superpixels("voc", LoadOptions(data_dir=tmp_path, progress=False))


def test_present_check_and_processed_cache_alone(tmp_path):
    assert not superpixel_present("voc", tmp_path)
    write_superpixel_fixture("voc", tmp_path, sizes=(2, 1, 1))
    assert superpixel_present("voc", tmp_path) and not superpixel_present("coco", tmp_path)
    first = load_lrgb_superpixels("voc", LoadOptions(data_dir=tmp_path, progress=False))
    for path in superpixel_files("voc", tmp_path).values():
        path.unlink()  # DGL's processed_{split}.pkl remain
    assert superpixel_present("voc", tmp_path)
    assert torch.equal(load_lrgb_superpixels("voc", LoadOptions(data_dir=tmp_path, progress=False)).test.labels,
                                                                first.test.labels)


def test_registry_loader_and_table(tmp_path):
    write_superpixel_fixture("coco", tmp_path, sizes=(2, 1, 1))
    splits = load_dataset("COCO", tmp_path, pe_k=2, limit_train=1, progress=False, mnist_images=None,
                          generate=False, depth=3)
    assert splits.name == "coco" and len(splits.train) == 1 and splits.pe_dim == 2
    assert DATASETS["voc"].size == "8,498/1,428/1,429" and DATASETS["coco"].size == "113,286/5,000/5,000"
    assert DATASETS["voc"].metric == DATASETS["coco"].metric == "f1_macro"
    assert "(21)" in DATASETS["voc"].task and "(81)" in DATASETS["coco"].task
    rows = {row["name"]: row for row in dataset_table(tmp_path)}
    assert rows["coco"]["present"] is True and rows["voc"]["present"] is False
    with pytest.raises(DataError, match="needs data_dir"):
        load_dataset("voc", None)


@pytest.mark.parametrize("name, params", [("voc", 506_213), ("coco", 505_661)])
def test_presets_fit_the_data_and_keep_the_papers_size(tmp_path, name, params):
    write_superpixel_fixture(name, tmp_path, sizes=(2, 1, 1))
    preset = get_preset(name)
    check_data_fits(preset.model, load_lrgb_superpixels(name, LoadOptions(data_dir=tmp_path, progress=False)))
    assert (preset.train.loss, preset.train.metric) == ("weighted_cross_entropy", "f1_macro")
    assert build_model(preset.model).num_parameters == params == preset.paper_params


def test_weighted_cross_entropy_with_81_classes_and_absent_ones():
    torch.manual_seed(0)
    logits, target = torch.randn(40, 81), torch.randint(0, 5, (40,)) * 7  # 5 of the 81 classes
    # the reference's computation: class sizes over the batch, w_c = (V - n_c) / V, 0 for absent classes
    sizes = torch.zeros(81, dtype=torch.float64)
    for c in target.tolist():
        sizes[c] += 1
    weight = (40 - sizes) / 40 * (sizes > 0)
    log_p = torch.log_softmax(logits.double(), -1)
    expected = -sum(weight[c] * log_p[i, c] for i, c in enumerate(target.tolist())) / weight[target].sum()
    assert weighted_cross_entropy(logits, target).item() == pytest.approx(expected.item(), rel=1e-5)


def test_macro_f1_is_sklearns_over_the_whole_split_not_a_batch_average():
    f1_score = pytest.importorskip("sklearn.metrics").f1_score
    rng = np.random.default_rng(0)
    target = rng.integers(0, 81, size=600)
    pred = np.where(rng.random(600) < 0.5, target, rng.integers(0, 90, size=600) % 81)
    pred[pred == 80] = 3  # class 80 is only a target; some classes are neither
    expected = f1_score(target, pred, average="macro", zero_division=0)
    assert f1_macro(torch.from_numpy(pred), torch.from_numpy(target)) == pytest.approx(expected, abs=1e-12)
    accumulator = MetricAccumulator("f1_macro")
    per_batch = []
    for start in range(0, 600, 50):  # batches of 50 "nodes", one-hot logits
        t, p = target[start:start + 50], pred[start:start + 50]
        accumulator.update(torch.nn.functional.one_hot(torch.from_numpy(p), 81).float(), torch.from_numpy(t), 0.0, 1)
        per_batch.append(f1_score(t, p, average="macro", zero_division=0))
    assert accumulator.compute()["metric"] == pytest.approx(expected, abs=1e-12)
    assert abs(np.mean(per_batch) - expected) > 1e-3  # the batch average is a different number
