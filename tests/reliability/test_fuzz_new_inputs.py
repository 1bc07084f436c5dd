"""The fuzzing of the readers (test_fuzz_readers.py) extended to the other inputs.

One-graph files with node masks, heterograph files (with and without node masks), partition folders and
node-task configurations are generated, then damaged at random, semantically (masks overlapping, empty, of
another type or length, on some graphs only; fields on some graphs only; labels of every kind; JSON keys
deleted or given other values; settings out of range) and byte-wise. Each is read the way the commands read
it, and what loads is then used (node batches cut, heterographs batched, a model run on a batch). Every
outcome must be a correct result or one of the package's user errors (one line on the command line, exit
code 2): never another exception, a signal death or a temp file left behind.
"""
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import dgl
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from geaet_dgl.data.nodes.node_graph import NodeGraph
from geaet_dgl.distgraph.engine import read_partitions
from geaet_dgl.distgraph.launch import partitioned_run_config
from geaet_dgl.distgraph.partition import check_matches_graph, partition_file, read_sidecar
from geaet_dgl.models import build_model
from geaet_dgl.training.node_batches import make_node_sampler
from geaet_dgl.data.run_splits import load_splits
from geaet_dgl.training import make_run_config
from tests.distgraph.conftest import planted_graph

from .test_fuzz_readers import BYTE_DAMAGE, SETTINGS, _damage_bytes, _no_temporaries, _outcome

MASKS = ("train_mask", "val_mask", "test_mask")


def _masks(n, gen):
    order = torch.randperm(n, generator=gen)
    masks = {}
    for k, name in enumerate(MASKS):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[order[k::3]] = True
        masks[name] = mask
    return masks


def _use(splits):
    """What training does first with what loaded: batches (node samplers or a batch of graphs)."""
    if isinstance(splits, NodeGraph):
        for kind in ("full", "random", "cluster"):
            if splits.target_ntype and kind != "full":
                continue
            parts = min(2, splits.graph.num_nodes()) if kind != "full" else 0
            sampler, error = _outcome(lambda: make_node_sampler(splits, kind, num_parts=parts))
            if error is None:
                batch = next(iter(sampler.epoch_batches(2, 0, 0)))
                assert batch.num_nodes() >= 1
        assert sum(splits.sizes().values()) >= 3
    else:
        for name in ("train", "val", "test"):
            split = getattr(splits, name)
            assert len(split) >= 1
            dgl.batch(list(split.graphs[:4]))  # graphs of one file batch together (same fields)


def _load(path):
    run = make_run_config(str(path), None, {"model.pe": "none", "model.hidden_dim": "8",
                                            "model.geanet.unit_size": "2", "model.num_heads": "2"}, threads=1)
    return load_splits(run.data, run.model)


# ------------------------------------------------------------------------------------------------
# One graph with node masks
# ------------------------------------------------------------------------------------------------


@st.composite
def one_graph_files(draw):
    n = draw(st.integers(1, 40))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    edges = draw(st.integers(0, 4 * n))
    g = dgl.graph((torch.randint(0, n, (edges,), generator=gen), torch.randint(0, n, (edges,), generator=gen)),
                  num_nodes=n)
    g.ndata["feat"] = torch.randn(n, draw(st.integers(1, 3)), generator=gen)
    if draw(st.booleans()):
        g.edata["feat"] = torch.rand(edges, 2, generator=gen)
    labels = draw(st.sampled_from(["int", "float", "negative", "nan", "outlier", "bool", "two_columns", "none"]))
    if labels in ("int", "negative", "outlier"):
        g.ndata["label"] = torch.randint(0, 3, (n,), generator=gen)
        if labels == "negative":
            g.ndata["label"][0] = -1
        if labels == "outlier":
            g.ndata["label"][-1] = 5000
    elif labels in ("float", "nan"):
        g.ndata["label"] = torch.randn(n, generator=gen)
        if labels == "nan":
            g.ndata["label"][0] = math.nan
    elif labels == "bool":
        g.ndata["label"] = torch.rand(n, generator=gen) > 0.5
    elif labels == "two_columns":
        g.ndata["label"] = torch.randn(n, 2, generator=gen)
    masks = _masks(n, gen)
    damage = draw(st.sampled_from(["none", "none", "overlap", "empty", "int", "short", "two_dim", "missing",
                                   "all_train"]))
    which = draw(st.sampled_from(MASKS))
    if damage == "overlap":
        masks[which] = masks[which] | masks[MASKS[(MASKS.index(which) + 1) % 3]]
    elif damage == "empty":
        masks[which] = torch.zeros(n, dtype=torch.bool)
    elif damage == "int":
        masks[which] = masks[which].long()
    elif damage == "short":
        masks[which] = masks[which][:-1]
    elif damage == "two_dim":
        masks[which] = masks[which][:, None].repeat(1, 2)
    elif damage == "missing":
        masks.pop(which)
    elif damage == "all_train":
        masks = {"train_mask": torch.ones(n, dtype=torch.bool), "val_mask": torch.zeros(n, dtype=torch.bool),
                 "test_mask": torch.zeros(n, dtype=torch.bool)}
    for name, mask in masks.items():
        if len(mask) == n:
            g.ndata[name] = mask
        else:  # DGL refuses a field of another length: stored on a second graph instead
            return [g, dgl.graph(([], []), num_nodes=len(mask))], {}
    extra = draw(st.sampled_from([None, "second_graph", "graph_labels"]))
    if extra == "second_graph":
        return [g, g.clone()], {}
    if extra == "graph_labels":
        return [g], {"label": torch.zeros(1)}
    return [g], {}


@settings(max_examples=12, **SETTINGS)
@given(one_graph_files(), BYTE_DAMAGE, st.integers(0, 10**6))
@pytest.mark.slow
def test_one_graph_files_with_masks(content, damage, seed):
    graphs, labels = content
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "one.bin"
        dgl.save_graphs(str(path), graphs, labels)
        _damage_bytes(path, damage, seed)
        splits, error = _outcome(lambda: _load(path))
        if error is None:
            _use(splits)
        _no_temporaries(folder)


# ------------------------------------------------------------------------------------------------
# Heterograph files, with and without node masks
# ------------------------------------------------------------------------------------------------


@st.composite
def hetero_files(draw):
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    masked = draw(st.booleans())
    count = 1 if masked and draw(st.integers(0, 3)) else draw(st.integers(2, 12))
    relations = [("a", "r0", "b"), ("b", "r1", "a"), ("b", "r2", "b")][:draw(st.integers(1, 3))]
    odd = draw(st.sampled_from(["nothing", "nothing", "missing_feat", "width", "extra_field", "masks_some",
                                "schema", "empty_type", "int_feat", "nan_feat", "edge_feat_some"]))
    odd_graph = draw(st.integers(0, count - 1))
    graphs = []
    for index in range(count):
        sizes = {"a": draw(st.integers(1, 8)), "b": draw(st.integers(1, 8))}
        if odd == "empty_type" and index == odd_graph:
            sizes["a"] = 0
        rels = relations if not (odd == "schema" and index == odd_graph) else relations[:1] + [("a", "rX", "a")]
        data = {}
        for src, name, dst in rels:
            e = draw(st.integers(0, 10)) if sizes[src] and sizes[dst] else 0
            data[(src, name, dst)] = (torch.randint(0, max(sizes[src], 1), (e,), generator=gen),
                                      torch.randint(0, max(sizes[dst], 1), (e,), generator=gen))
        g = dgl.heterograph(data, num_nodes_dict=sizes)
        for ntype in g.ntypes:
            width = 3 + (odd == "width" and index == odd_graph)
            values = torch.randn(g.num_nodes(ntype), width, generator=gen)
            if odd == "nan_feat" and index == odd_graph and len(values):
                values[0, 0] = math.nan
            if odd == "int_feat" and index == odd_graph:
                values = values.long()
            if not (odd == "missing_feat" and index == odd_graph and ntype == "a"):
                g.nodes[ntype].data["feat"] = values
        if odd == "edge_feat_some" and index % 2 == 0:
            rel = g.canonical_etypes[0]
            g.edges[rel].data["feat"] = torch.rand(g.num_edges(rel), 2, generator=gen)
        if odd == "extra_field" and index == odd_graph:
            g.nodes["b"].data["extra"] = torch.zeros(g.num_nodes("b"))
        label_kind = draw(st.sampled_from(["node", "graph", "none", "float"]))
        if label_kind in ("node", "float") or masked:
            values = torch.randint(0, 2, (g.num_nodes("b"),), generator=gen)
            g.nodes["b"].data["label"] = values.float() if label_kind == "float" else values
        if masked and not (odd == "masks_some" and index != odd_graph):
            for name, mask in _masks(g.num_nodes("b"), gen).items():
                g.nodes["b"].data[name] = mask
        graphs.append(g)
    labels = {}
    if not masked and label_kind == "graph":
        for g in graphs:
            g.nodes["b"].data.pop("label", None)
        labels = {"label": torch.randint(0, 2, (count,), generator=gen)}
    return graphs, labels


@settings(max_examples=12, **SETTINGS)
@given(hetero_files(), BYTE_DAMAGE, st.integers(0, 10**6), st.sampled_from([None, "a", "b", "c"]))
@pytest.mark.slow
def test_heterograph_files(content, damage, seed, target):
    graphs, labels = content
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hetero.bin"
        dgl.save_graphs(str(path), graphs, labels)
        _damage_bytes(path, damage, seed)

        def load():
            run = make_run_config(str(path), None, {"model.hidden_dim": "8", "model.geanet.unit_size": "2",
                                                    "model.num_heads": "2", "data.target_ntype": target},
                                  threads=1)
            return run, load_splits(run.data, run.model)

        loaded, error = _outcome(load)
        if error is None:
            run, splits = loaded
            _use(splits)
            model = build_model(run.model).eval()
            graph = splits.graph if isinstance(splits, NodeGraph) else dgl.batch(list(splits.train.graphs[:3]))
            with torch.no_grad():
                assert torch.isfinite(model(graph)).all()
        _no_temporaries(folder)


# ------------------------------------------------------------------------------------------------
# Partition folders
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def partition_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz_parts")
    path = str(root / "g.bin")
    dgl.save_graphs(path, [planted_graph(120)])
    config = partition_file(path, 2, str(root / "parts")).config
    return root, path, config


JSON_SCALARS = st.none() | st.booleans() | st.integers(-3, 500) | st.text(max_size=5) | st.lists(
    st.integers(-1, 200), max_size=3)


@st.composite
def partition_damage(draw):
    kind = draw(st.sampled_from(["none", "delete", "bytes", "json_key", "json_value", "sidecar_key",
                                 "sidecar_value", "graph_file", "touch"]))
    return kind, draw(st.integers(0, 10**6)), draw(JSON_SCALARS), draw(st.sampled_from(["truncate", "overwrite",
                                                                                       "append"]))


def _json_paths(tree, prefix=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield prefix + (key,)
            yield from _json_paths(value, prefix + (key,))


def _edit_json(path, pick, value, delete):
    with open(path) as handle:
        tree = json.load(handle)
    paths = list(_json_paths(tree))
    where = paths[pick % len(paths)]
    parent = tree
    for key in where[:-1]:
        parent = parent[key]
    if delete:
        parent.pop(where[-1])
    else:
        parent[where[-1]] = value
    with open(path, "w") as handle:
        json.dump(tree, handle)


@settings(max_examples=12, **SETTINGS)
@given(partition_damage())
@pytest.mark.slow
def test_partition_folders(partition_folder, damage):
    root, graph_path, config = partition_folder
    kind, pick, value, how = damage
    with tempfile.TemporaryDirectory() as folder:
        shutil.copytree(os.path.dirname(config), os.path.join(folder, "parts"))
        shutil.copy2(graph_path, os.path.join(folder, "g.bin"))
        parts_dir = os.path.join(folder, "parts")
        sidecar_path = os.path.join(parts_dir, "geaet-partition.json")
        with open(sidecar_path) as handle:  # the copy points at its own graph file
            sidecar = json.load(handle)
        sidecar["graph_file"]["path"] = os.path.join(folder, "g.bin")
        with open(sidecar_path, "w") as handle:
            json.dump(sidecar, handle)
        config_copy = os.path.join(parts_dir, os.path.basename(config))
        files = sorted(str(p) for p in Path(parts_dir).rglob("*") if p.is_file())
        target = files[pick % len(files)]
        if kind == "delete":
            os.remove(target)
        elif kind == "bytes":
            _damage_bytes(Path(target), how, pick)
        elif kind in ("json_key", "json_value"):
            _edit_json(config_copy, pick, value, kind == "json_key")
        elif kind in ("sidecar_key", "sidecar_value"):
            _edit_json(sidecar_path, pick, value, kind == "sidecar_key")
        elif kind == "graph_file":
            _damage_bytes(Path(folder) / "g.bin", how, pick)
        elif kind == "touch":
            stat = os.stat(os.path.join(folder, "g.bin"))
            os.utime(os.path.join(folder, "g.bin"), ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))

        def checks():  # what `train --partitions` checks before it starts any process
            parts = read_partitions(config_copy)
            check_matches_graph(config_copy, read_sidecar(config_copy), parts.num_nodes, parts.num_edges)
            return parts, partitioned_run_config(config_copy, None, {"model.pe": "none"}, threads=1)

        result, error = _outcome(checks)
        if error is None:
            parts, run = result
            assert parts.num_parts == 2 and run.model.out_feats >= 1
        _no_temporaries(folder)


# ------------------------------------------------------------------------------------------------
# Node-task configurations
# ------------------------------------------------------------------------------------------------

NODE_SETTINGS = {
    "model.hidden_dim": st.sampled_from(["8", "12", "0", "-4", "7.5", "x"]),
    "model.num_layers": st.sampled_from(["1", "2", "0"]),
    "model.num_heads": st.sampled_from(["1", "2", "3", "0"]),
    "model.geanet.unit_size": st.sampled_from(["2", "4", "null", "0"]),
    "model.geanet.num_heads": st.sampled_from(["1", "2", "4", "0"]),
    "model.attention": st.sampled_from(["none", "transformer", "performer", "magic"]),
    "model.mpnn": st.sampled_from(["gatedgcn", "gcn", "gat", "none"]),
    "model.pe": st.sampled_from(["none", "rwse", "lappe", "eslappe"]),
    "model.pe_k": st.sampled_from(["2", "4", "0"]),
    "model.pe_dim": st.sampled_from(["2", "4", "16"]),
    "model.local_dropout": st.sampled_from(["0", "0.5", "1", "-0.1", "nan"]),
    "model.head_dropout": st.sampled_from(["0", "0.3", "inf", "2"]),
    "model.norm": st.sampled_from(["batch", "layer", "group"]),
    "model.head": st.sampled_from(["node", "graph"]),
    "train.lr": st.sampled_from(["1e-3", "0", "nan", "inf", "-1"]),
    "train.weight_decay": st.sampled_from(["0", "1e-5", "-1", "nan"]),
    "train.clip_grad_norm": st.sampled_from(["1.0", "null", "0", "inf"]),
    "train.batch_size": st.sampled_from(["1", "2", "4", "0"]),
    "data.sampler": st.sampled_from(["full", "cluster", "random", "metis"]),
    "data.num_parts": st.sampled_from(["0", "1", "2", "7", "500", "-1"]),
    "data.task": st.sampled_from(["node-classification", "node-regression", "graph-classification"]),
    "data.target_ntype": st.sampled_from(["paper", "null"]),
}


@pytest.fixture(scope="module")
def node_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz_node") / "node.bin"
    dgl.save_graphs(str(path), [planted_graph(90)])
    return path


@settings(max_examples=10, **SETTINGS)
@given(st.dictionaries(st.sampled_from(sorted(NODE_SETTINGS)), st.just(None), max_size=5).flatmap(
    lambda keys: st.fixed_dictionaries({key: NODE_SETTINGS[key] for key in keys})))
@pytest.mark.slow
def test_node_configs(node_file, overrides):
    def build():
        run = make_run_config(str(node_file), None, {"model.hidden_dim": "8", "model.geanet.unit_size": "2",
                                                     "model.num_heads": "2", **overrides}, threads=1)
        data = load_splits(run.data, run.model)
        return run, data, make_node_sampler(data, run.data.sampler, run.data.num_parts)

    built, error = _outcome(build)
    if error is None:
        run, data, sampler = built
        assert 0 < run.train.lr < math.inf and run.model.hidden_dim > 0
        batch = next(iter(sampler.epoch_batches(run.train.batch_size, 0, 0)))
        model = build_model(run.model).eval()
        with torch.no_grad():
            output = model(batch)
        assert output.shape[0] == batch.num_nodes() and torch.isfinite(output).all()
