"""One loader signature: every dataset loader takes one LoadOptions; the encodings go through one cached path."""
import ast
import functools
import inspect
from pathlib import Path

import dgl
import pytest
import torch

from geaet_dgl.data import LoadOptions, load_dataset, load_with, registry
from geaet_dgl.data.encodings import apply, pe_cache
from geaet_dgl.data.encodings.apply import EncodingCache, EncodingRequest, encode_graphs
from geaet_dgl.data.options import FileSplit

DATA = Path(__file__).resolve().parents[2] / "geaet_dgl" / "data"


def _loader_parameters(loader):
    if isinstance(loader, functools.partial):  # a family loader bound to its name
        assert len(loader.args) == 1 and isinstance(loader.args[0], str) and not loader.keywords
        return list(inspect.signature(loader.func).parameters)[1:]
    return list(inspect.signature(loader).parameters)


@pytest.mark.parametrize("name", sorted(registry.LOADERS))
def test_every_registered_loader_takes_the_options_alone(name):
    params = _loader_parameters(registry.LOADERS[name])
    assert params[0] == "options"
    loader = registry.LOADERS[name]
    function = loader.func if isinstance(loader, functools.partial) else loader
    assert all(inspect.signature(function).parameters[p].default is not inspect.Parameter.empty
               for p in params[1:]), params  # extras (tree's generator settings) keep their defaults


def test_the_keyword_form_is_the_options_form():
    by_keywords = load_dataset("synthetic", None, limit_train=3, limit_val=2, limit_test=2, pe_k=3, rwse_k=4,
                               progress=False)
    by_options = load_with("synthetic", LoadOptions(limit_train=3, limit_val=2, limit_test=2, pe_k=3, rwse_k=4,
                                                    progress=False))
    for split in ("train", "val", "test"):
        for g, h in zip(getattr(by_keywords, split).graphs, getattr(by_options, split).graphs):
            for key in ("feat", "lap_pe", "lap_eigval", "rwse"):
                assert torch.equal(g.ndata[key], h.ndata[key]), key


def test_an_unknown_option_is_refused_not_dropped():
    with pytest.raises(TypeError, match="pe_kk"):
        load_dataset("synthetic", None, pe_kk=3)


def test_the_file_split_fields_make_one_file_split():
    options = LoadOptions(split=(0.5, 0.25, 0.25), split_seed=3, legacy_split=True)
    assert options.file_split == FileSplit(split=(0.5, 0.25, 0.25), split_seed=3, legacy_split=True)
    assert options.limits == (None, None, None) and LoadOptions(limit_val=4).limit_of["val"] == 4


def test_a_dataset_default_applies_only_where_the_options_name_none():
    assert LoadOptions().encodings(default_k=8, default_norm="none") == EncodingRequest(8, "none", None, True)
    asked = LoadOptions(pe_k=0, laplacian_norm="sym", rwse_k=5, progress=False)
    assert asked.encodings(default_k=8, default_norm="none") == EncodingRequest(0, "sym", 5, False)


def _cycle_and_path():
    return [dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0])), dgl.graph(([0, 1], [1, 2]))]


def test_encode_graphs_reads_a_cache_written_before_it_existed(tmp_path, monkeypatch):
    graphs = _cycle_and_path()
    old = pe_cache.cached_split_pe(graphs, tmp_path, tag="train", k=2, norm="sym", rwse_k=3, stamp="s", progress=False)
    written = sorted(p.name for p in tmp_path.iterdir())

    def no_compute(*args, **kwargs):
        raise AssertionError("recomputed: the cache was not hit")

    monkeypatch.setattr(pe_cache, "compute_split_pe", no_compute)
    again = _cycle_and_path()
    encode_graphs(again, EncodingRequest(k=2, norm="sym", rwse_k=3, progress=False),
                  EncodingCache(tmp_path, "train", "s"))
    assert sorted(p.name for p in tmp_path.iterdir()) == written  # same file name, nothing new
    assert torch.equal(torch.cat([g.ndata["lap_pe"] for g in again]), old.lap_pe)
    assert torch.equal(torch.cat([g.ndata["rwse"] for g in again]), old.rwse)


def test_encode_graphs_without_a_cache_computes_the_laplacian_eigenpairs():
    graphs = _cycle_and_path()
    encode_graphs(graphs, EncodingRequest(k=2, norm="sym", progress=False))
    # I - D^-1/2 A D^-1/2 of the 4-cycle has eigenvalues 0, 1, 1, 2; of the 3-node path 0, 1, 2
    for g in graphs:
        vectors, values = g.ndata["lap_pe"], g.ndata["lap_eigval"]
        assert torch.allclose(values, torch.tensor([0.0, 1.0]).expand(g.num_nodes(), 2), atol=1e-5)
        assert torch.allclose(vectors.T @ vectors, torch.eye(2), atol=1e-5)  # orthonormal columns
        assert "rwse" not in g.ndata


def _graph_file(tmp_path):
    graphs = [dgl.to_bidirected(dgl.graph((torch.arange(n - 1), torch.arange(1, n)))) for n in range(3, 23)]
    for g in graphs:
        g.ndata["feat"] = torch.ones(g.num_nodes(), 2)
    path = tmp_path / "g.bin"
    dgl.save_graphs(str(path), graphs, {"label": torch.arange(20) % 2})
    return path


@pytest.mark.slow
def test_a_loader_returns_no_encodings_and_the_one_path_after_it_attaches_them(tmp_path):
    path = _graph_file(tmp_path)
    options = LoadOptions(data_file=path, pe_k=2, rwse_k=3, progress=False)
    bare = registry.LOADERS["file"](options)
    assert all("lap_pe" not in g.ndata and "rwse" not in g.ndata for g in bare.train.graphs + bare.test.graphs)
    assert list(bare.encoding_plan.caches) == ["train", "val", "test"]
    assert not (tmp_path / "geaet_cache").exists() or not list((tmp_path / "geaet_cache").iterdir())

    splits = load_with("file", options)
    written = sorted(p.name for p in (tmp_path / "geaet_cache").iterdir())
    assert len(written) == 3  # one cache file a split, under the plan's tags
    for part in ("train", "val", "test"):
        graphs = getattr(splits, part).graphs
        expected = pe_cache.compute_split_pe(graphs, 2, "sym", 3, progress=False)  # independent of the cache
        assert torch.equal(torch.cat([g.ndata["lap_eigval"][:1] for g in graphs]), expected.lap_eigval)
        assert torch.equal(torch.cat([g.ndata["rwse"] for g in graphs]), expected.rwse)
    again = load_with("file", options)  # read back from the same files
    assert sorted(p.name for p in (tmp_path / "geaet_cache").iterdir()) == written
    assert torch.equal(again.test.graphs[0].ndata["lap_pe"], splits.test.graphs[0].ndata["lap_pe"])


def test_synthetic_graphs_get_the_encodings_their_generator_computes():
    from geaet_dgl.data.generated.synthetic import synthetic_splits

    splits = load_dataset("synthetic", limit_train=3, limit_val=2, limit_test=2, pe_k=3, rwse_k=4, seed=5,
                          laplacian_norm="none", progress=False)
    inline = synthetic_splits(3, 2, 2, seed=5, pe_k=3, rwse_k=4, laplacian_norm="none")  # PE computed per graph
    for part in ("train", "val", "test"):
        for ours, theirs in zip(getattr(splits, part).graphs, getattr(inline, part).graphs):
            for key in ("lap_pe", "lap_eigval", "rwse", "feat"):
                assert torch.equal(ours.ndata[key], theirs.ndata[key]), (part, key)


def test_voc_plans_attach_nothing_unless_asked():
    plan = apply.EncodingPlan({"train": None}, only_if_asked=True)
    graphs = _cycle_and_path()
    holder = type("Splits", (), {"train": type("Part", (), {"graphs": graphs})(), "encoding_plan": plan})()
    apply.encode_splits(holder, LoadOptions(progress=False))
    assert all("lap_pe" not in g.ndata for g in graphs)
    apply.encode_splits(holder, LoadOptions(rwse_k=2, progress=False))  # RWSE alone is asked for
    assert all(g.ndata["rwse"].shape == (g.num_nodes(), 2) and g.ndata["lap_pe"].shape == (g.num_nodes(), 0)
               for g in graphs)


def test_a_file_stamp_is_its_size_and_mtime(tmp_path):
    path = tmp_path / "g.bin"
    path.write_bytes(b"12345")
    cache = apply.beside(path, "train")
    assert cache.folder == tmp_path / "geaet_cache" and cache.stamp == f"5:{path.stat().st_mtime_ns}"


def test_the_data_package_keeps_short_signatures_and_modules():
    long_modules, long_signatures = {}, []
    for path in sorted(DATA.rglob("*.py")):
        source = path.read_text()
        if (lines := len(source.splitlines())) > 500:
            long_modules[str(path.relative_to(DATA))] = lines
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) + bool(args.vararg) + \
                    bool(args.kwarg)
                if count > 9:
                    long_signatures.append(f"{path.relative_to(DATA)}:{node.name} ({count})")
    assert not long_modules and not long_signatures, (long_modules, long_signatures)
