"""The readers under random damage (hypothesis).

Graph files, split files, reference YAML configs and checkpoints are generated, then damaged at random:
semantically (fields of other widths and types, NaN, missing or extra fields, labels of every kind, keys
deleted or given values of other types) and byte-wise (truncated, bytes overwritten, garbage appended).
Each must give a correct result or one of the package's user errors (one line on the command line, exit
code 2) — never another exception, and never a temp file left behind.
"""
import io
import json
import os
import random
import tempfile
from pathlib import Path

import dgl
import numpy as np
import pytest
import torch
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geaet_dgl.data.options import LoadOptions
from geaet_dgl.errors import GeaetError
from geaet_dgl.data.own_files.graph_files import TASKS, read_split_file
from geaet_dgl.data.registry import load_with
from geaet_dgl.scoring import open_trained_run
from geaet_dgl.interop.reference_yaml import reference_run_config
from tests.interop.test_reference_yaml import REFERENCE_YAML
from tests.fixtures import FIXTURES

USER_ERRORS = GeaetError
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CHECKPOINT = FIXTURES / "run-before-format-2" / "last.pt"


def _outcome(call):
    """Run ``call``: its result, or the user error it raised (anything else fails the test)."""
    try:
        return call(), None
    except USER_ERRORS as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        return None, exc


def _no_temporaries(folder: str) -> None:
    left = [p for p in Path(folder).rglob("*") if p.name.endswith(".tmp")]
    assert not left, f"partial files left: {left}"


def _damage_bytes(path: Path, how: str, seed: int) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    if how == "truncate" and data:
        data = data[:rng.randrange(len(data))]
    elif how == "overwrite" and data:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == "append":
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    path.write_bytes(bytes(data))


BYTE_DAMAGE = st.sampled_from(["none", "none", "truncate", "overwrite", "append"])

# ------------------------------------------------------------------------------------------------
# Graph files
# ------------------------------------------------------------------------------------------------


@st.composite
def graph_files(draw):
    """(graphs, label dict) of a graph file with random semantic damage."""
    count = draw(st.integers(1, 14))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool]))
    width = draw(st.integers(1, 3))
    edge_feats = draw(st.sampled_from(["all", "none", "some"]))
    odd = draw(st.sampled_from(["nothing", "width", "dtype", "missing", "nan", "extra_field", "one_dim",
                                "empty_graph", "negative_type"]))
    odd_graph = draw(st.integers(0, count - 1))
    graphs = []
    for index in range(count):
        n = draw(st.integers(1, 7))
        if odd == "empty_graph" and index == odd_graph:
            n = 0
        edges = draw(st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))),
                              max_size=2 * n)) if n else []
        g = dgl.graph(([e[0] for e in edges], [e[1] for e in edges]), num_nodes=n)
        w = width + 1 if odd == "width" and index == odd_graph else width
        values = torch.randn(n, w, generator=gen)
        kind = torch.float64 if odd == "dtype" and index == odd_graph and dtype != torch.float64 else dtype
        if kind == torch.int64:
            values = (values.abs() * 2).long()
        elif kind == torch.bool:
            values = values > 0
        else:
            values = values.to(kind)
        if odd == "nan" and index == odd_graph and n and values.is_floating_point():
            values[0, 0] = float("nan")
        if odd == "negative_type" and index == odd_graph and n and kind == torch.int64:
            values[0, 0] = -1
        if odd == "one_dim":
            values = values[:, 0]
        if not (odd == "missing" and index == odd_graph):
            g.ndata["feat"] = values
        if edge_feats == "all" or (edge_feats == "some" and index % 2 == 0):
            g.edata["feat"] = torch.rand(g.num_edges(), 2, generator=gen)
        if odd == "extra_field" and index == odd_graph:
            g.ndata["extra"] = torch.zeros(n)
        graphs.append(g)
    labels_kind = draw(st.sampled_from(["int", "float", "bool", "nan", "negative", "short", "two_columns",
                                        "node", "node_some", "none", "other_key"]))
    labels = {}
    if labels_kind in ("int", "negative", "short"):
        values = torch.randint(0, 3, (count,), generator=gen)
        if labels_kind == "negative":
            values[0] = -2
        if labels_kind == "short":
            values = values[:-1]
        labels["label"] = values
    elif labels_kind in ("float", "nan", "two_columns"):
        values = torch.randn(count, 2 if labels_kind == "two_columns" else 1, generator=gen).squeeze(-1)
        if labels_kind == "nan":
            values.view(-1)[0] = float("nan")
        labels["label"] = values
    elif labels_kind == "bool":
        labels["label"] = torch.rand(count, generator=gen) > 0.5
    elif labels_kind in ("node", "node_some"):
        for index, g in enumerate(graphs):
            if labels_kind == "node" or index % 2 == 0:
                g.ndata["label"] = torch.randint(0, 2, (g.num_nodes(),), generator=gen)
    elif labels_kind == "other_key":
        labels["y"] = torch.zeros(count)
    return graphs, labels


@settings(max_examples=50, **SETTINGS)
@given(graph_files(), BYTE_DAMAGE, st.integers(0, 10**6), st.sampled_from([None, *TASKS]),
       st.sampled_from([0, 2]))
@pytest.mark.slow
def test_graph_files(content, damage, seed, task, pe_k):
    graphs, labels = content
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "g.bin"
        dgl.save_graphs(str(path), graphs, labels)
        _damage_bytes(path, damage, seed)
        splits, error = _outcome(lambda: load_with("file", LoadOptions(data_file=path, task=task, split=(0.6, 0.2,
                                                                     0.2), pe_k=pe_k, progress=False)))
        if error is None:
            for name in ("train", "val", "test"):
                split = getattr(splits, name)
                assert len(split) >= 1
                assert split.graphs[0].ndata["feat"].dtype in (torch.float32, torch.int64)
                if splits.source.split("(")[-1].startswith("graph-classification"):
                    assert split.labels.dtype == torch.int64 and int(split.labels.min()) >= 0
        _no_temporaries(folder)


# ------------------------------------------------------------------------------------------------
# Split files
# ------------------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-3, 14) | st.floats(allow_nan=False) | st.text(
    max_size=4), lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10)
INDEX_LISTS = st.lists(st.integers(-2, 12) | st.booleans() | st.floats(0, 9) | st.text(max_size=2), max_size=6)


@st.composite
def split_contents(draw):
    """A split file's content: near-valid dicts of index lists, or any JSON."""
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(["train", "val", "valid", "test", "other"]), unique=True, max_size=4))
        return {key: draw(INDEX_LISTS if draw(st.integers(0, 3)) else JSON_VALUES) for key in keys}
    return draw(JSON_VALUES)


@settings(max_examples=150, **SETTINGS)
@given(split_contents(), st.sampled_from(["json", "npz"]), BYTE_DAMAGE, st.integers(0, 10**6))
@pytest.mark.slow
def test_split_files(content, form, damage, seed):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"split.{form}"
        if form == "npz":
            arrays = {}
            if isinstance(content, dict):
                for key, value in content.items():
                    try:
                        arrays[str(key) or "x"] = np.asarray(value, dtype=np.int64 if seed % 2 else None)
                    except (TypeError, ValueError, OverflowError):
                        arrays[str(key) or "x"] = np.zeros(2)
            np.savez(path, **arrays)
        else:
            path.write_text(json.dumps(content))
        _damage_bytes(path, damage, seed)
        split, error = _outcome(lambda: read_split_file(path, 10, "g.bin"))
        if error is None:
            seen = [i for name in ("train", "val", "test") for i in split[name]]
            assert all(split[name] for name in ("train", "val", "test"))
            assert len(seen) == len(set(seen)) and all(type(i) is int and 0 <= i < 10 for i in seen)


# ------------------------------------------------------------------------------------------------
# Reference YAML configs
# ------------------------------------------------------------------------------------------------

SCALARS = st.none() | st.booleans() | st.integers(-5, 300) | st.floats(-10, 10) | st.text(max_size=6)


def _paths(tree, prefix=()):
    for key, value in tree.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from _paths(value, prefix + (key,))


@st.composite
def yaml_texts(draw):
    tree = yaml.safe_load(REFERENCE_YAML[draw(st.sampled_from(sorted(REFERENCE_YAML)))])
    paths = list(_paths(tree))
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(paths))
        parent = tree
        for key in where[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        action = draw(st.sampled_from(["delete", "replace", "add"]))
        if action == "delete":
            parent.pop(where[-1], None)
        elif action == "replace":
            parent[where[-1]] = draw(SCALARS | st.lists(SCALARS, max_size=3))
        else:
            parent[draw(st.text(min_size=1, max_size=6))] = draw(SCALARS)
    text = yaml.safe_dump(tree)
    if draw(st.integers(0, 4)) == 0:  # text damage
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.text(max_size=8)) + text[cut + draw(st.integers(0, 20)):]
    return text


@settings(max_examples=80, **SETTINGS)
@given(yaml_texts())
@pytest.mark.slow
def test_reference_configs(text):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.yaml"
        path.write_text(text)
        run, error = _outcome(lambda: reference_run_config(path))
        if error is None:
            assert run.model.hidden_dim > 0 and run.train.epochs >= 1


# ------------------------------------------------------------------------------------------------
# Checkpoints
# ------------------------------------------------------------------------------------------------


@st.composite
def checkpoint_damage(draw):
    """A function that damages a checkpoint's content (a state dict), or None for bytes-only damage."""
    kind = draw(st.sampled_from(["none", "drop_key", "run_config", "weights", "version"]))
    value = draw(SCALARS | st.lists(SCALARS, max_size=2) | st.dictionaries(st.text(max_size=4), SCALARS, max_size=2))
    pick = draw(st.integers(0, 10**6))

    def damage(state):
        if kind == "drop_key":
            state.pop(sorted(state)[pick % len(state)])
        elif kind == "run_config":
            paths = list(_paths(state["run_config"]))
            where = paths[pick % len(paths)]
            parent = state["run_config"]
            for key in where[:-1]:
                parent = parent[key]
            if pick % 3 == 0:
                parent.pop(where[-1])
            else:
                parent[where[-1]] = value
        elif kind == "weights":
            name = sorted(state["model"])[pick % len(state["model"])]
            if pick % 2:
                state["model"].pop(name)
            else:
                state["model"][name] = torch.zeros(pick % 5 + 1)
        elif kind == "version":
            state["format_version"] = value
    return damage


@settings(max_examples=60, **SETTINGS)
@given(checkpoint_damage(), BYTE_DAMAGE, st.integers(0, 10**6))
@pytest.mark.slow
def test_checkpoints(damage, byte_damage, seed):
    state = torch.load(CHECKPOINT, map_location="cpu", weights_only=True)
    damage(state)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "last.pt"
        buffer = io.BytesIO()
        torch.save(state, buffer)
        path.write_bytes(buffer.getvalue())
        _damage_bytes(path, byte_damage, seed)
        opened, error = _outcome(lambda: open_trained_run(path))
        if error is None:
            run, model, _ = opened
            assert model.num_parameters > 0 and not model.training
        _no_temporaries(folder)
