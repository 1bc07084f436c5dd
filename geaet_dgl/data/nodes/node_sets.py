"""The field's named node-classification sets, read by DGL's own loader classes (``dgl.data``).

Each set is one graph with node features, labels and train / val / test
masks, returned as the same :class:`~.node_graph.NodeGraph` a one-graph file
with masks becomes (:mod:`.node_graph`), so every sampler, model and command
that trains on such a file trains on these.

==================  =================================  =========================================
family              sets (DGL class)                   split
==================  =================================  =========================================
Planetoid           cora, citeseer, pubmed             the public split (20 labels per class,
                    (CoraGraphDataset, ...)            500 val, 1,000 test)
geom-gcn            cornell, texas, wisconsin,         geom-gcn's 10 splits (48/32/20 %),
                    actor, chameleon, squirrel         ``--split-index K``
                    (CornellDataset, ..., ActorDataset)
heterophilous       roman-empire, amazon-ratings,      Platonov et al.'s 10 splits (50/25/25 %);
                    minesweeper, tolokers, questions   ROC-AUC for the three binary sets
                    (RomanEmpireDataset, ...)
GNN benchmark       amazon-computers, amazon-photo,    none published: a seeded 60/20/20 split
                    coauthor-cs, coauthor-physics      (``data.split_seed``, :func:`~.node_splits.seeded_split`)
                    (AmazonCoBuyComputerDataset, ...)
Wiki-CS             wikics (WikiCSDataset)             its 20 train / val splits, one test mask
==================  =================================  =========================================

The files
---------
``data_dir`` is DGL's ``raw_dir``: DGL keeps each set in
``<raw_dir>/<dgl name>_<first 8 hex digits of sha1(download URL)>/`` (e.g.
``citeseer_d6836239/``), so ``--data-dir ~/.dgl`` reads what DGL has
downloaded before. A missing folder is downloaded by DGL's loader as usual;
when that fails (offline), one line names the files and the folder they go
in (:func:`expected_files`). A folder that exists but lacks files is not
downloaded again by DGL: one line names the missing files. DGL writes its
processed cache (Planetoid, GNN benchmark, Wiki-CS) beside the raw files.

What the graph becomes
----------------------
``ndata['feat']`` float32 as DGL's loader computes it (Planetoid's features
row-normalised by DGL), ``ndata['label']`` int64, the three ``(N,)`` bool
masks of the chosen split, ``edata['feat']`` ``(E, 1)`` zeros (no edge
features). The edges are DGL's; the geom-gcn files list each edge one way, so
their graph is made bidirected (``dgl.to_bidirected``: reverse edges added,
duplicates dropped), as the other families already are.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import dgl
import torch

from ..errors import DataError
from ..options import LoadOptions
from .node_splits import SPLITS, check_split_index, seeded_split, select_split, split_count

log = logging.getLogger(__name__)
PathLike = Union[str, os.PathLike]

GEOM_GCN_SPLITS = 10
#: How messages name a set whose split is seeded (no public split to pick).
_SEEDED_WHERE = "{name} (a seeded split; pick another with --set data.split_seed=K)"

#: What each family's split is, as ``geaet-dgl datasets`` and the run log state it.
SPLIT_KINDS = {
    "planetoid": "public split",
    "geom-gcn": "10 geom-gcn splits (48/32/20%)",
    "heterophilous": "10 splits (50/25/25%)",
    "gnn-benchmark": "seeded 60/20/20 (data.split_seed)",
    "wikics": "20 train/val splits, 1 test",
}

#: How many public splits each family publishes (a seeded split: 1), known without reading the data.
PUBLISHED_SPLITS = {"planetoid": 1, "geom-gcn": GEOM_GCN_SPLITS, "heterophilous": 10, "gnn-benchmark": 1,
                    "wikics": 20}

#: Whose public splits a family's masks hold (the run log names them).
SPLIT_SOURCES = {"geom-gcn": "geom-gcn's splits", "heterophilous": "Platonov et al.'s splits",
                 "wikics": "Wiki-CS's train/val splits, its one test mask"}


@dataclass(frozen=True)
class NodeSetSpec:
    """One named node set: the DGL class that reads it, its folder, metric and published size.

    ``dgl_name`` is the class's dataset name (``self.name`` in DGL): it names
    the raw folder and, for Planetoid, the files. ``nodes`` / ``edges`` /
    ``classes`` / ``features`` are the published figures (DGL's docstrings;
    edges as DGL's graph holds them, the geom-gcn ones one way).
    """

    name: str
    dgl_class: str
    family: str
    dgl_name: str
    metric: str
    nodes: int
    edges: int
    classes: int
    features: int
    split_sizes: str  # train / val / test nodes of one split, as published

    @property
    def split_kind(self) -> str:
        return SPLIT_KINDS[self.family]

    @property
    def seeded(self) -> bool:
        """No published split: :func:`~.node_splits.seeded_split` with ``data.split_seed``."""
        return self.family == "gnn-benchmark"

    def url(self) -> str:
        """What DGL's loader downloads (its hash names the raw folder; DGL_REPO moves DGL's own files)."""
        if self.family == "heterophilous":
            return f"https://github.com/yandex-research/heterophilous-graphs/raw/main/data/{self.dgl_name}.npz"
        from dgl.data.utils import _get_dgl_url

        return _get_dgl_url(f"dataset/{self.dgl_name}.zip")


NODE_SETS: Dict[str, NodeSetSpec] = {spec.name: spec for spec in (
    NodeSetSpec("cora", "CoraGraphDataset", "planetoid", "cora_v2", "accuracy", 2708, 10556, 7, 1433,
                "140/500/1,000"),
    NodeSetSpec("citeseer", "CiteseerGraphDataset", "planetoid", "citeseer", "accuracy", 3327, 9228, 6, 3703,
                "120/500/1,000"),
    NodeSetSpec("pubmed", "PubmedGraphDataset", "planetoid", "pubmed", "accuracy", 19717, 88651, 3, 500,
                "60/500/1,000"),
    NodeSetSpec("cornell", "CornellDataset", "geom-gcn", "cornell", "accuracy", 183, 298, 5, 1703, "87/59/37"),
    NodeSetSpec("texas", "TexasDataset", "geom-gcn", "texas", "accuracy", 183, 325, 5, 1703, "87/59/37"),
    NodeSetSpec("wisconsin", "WisconsinDataset", "geom-gcn", "wisconsin", "accuracy", 251, 515, 5, 1703, "120/80/51"),
    NodeSetSpec("actor", "ActorDataset", "geom-gcn", "actor", "accuracy", 7600, 33391, 5, 932, "3,648/2,432/1,520"),
    NodeSetSpec("chameleon", "ChameleonDataset", "geom-gcn", "chameleon", "accuracy", 2277, 36101, 5, 2325,
                "1,092/729/456"),
    NodeSetSpec("squirrel", "SquirrelDataset", "geom-gcn", "squirrel", "accuracy", 5201, 217073, 5, 2089,
                "2,496/1,664/1,041"),
    NodeSetSpec("roman-empire", "RomanEmpireDataset", "heterophilous", "roman_empire", "accuracy", 22662, 65854, 18,
                300, "50/25/25%"),
    NodeSetSpec("amazon-ratings", "AmazonRatingsDataset", "heterophilous", "amazon_ratings", "accuracy", 24492,
                186100, 5, 300, "50/25/25%"),
    NodeSetSpec("minesweeper", "MinesweeperDataset", "heterophilous", "minesweeper", "roc_auc", 10000, 78804, 2, 7,
                "50/25/25%"),
    NodeSetSpec("tolokers", "TolokersDataset", "heterophilous", "tolokers", "roc_auc", 11758, 1038000, 2, 10,
                "50/25/25%"),
    NodeSetSpec("questions", "QuestionsDataset", "heterophilous", "questions", "roc_auc", 48921, 307080, 2, 301,
                "50/25/25%"),
    NodeSetSpec("amazon-computers", "AmazonCoBuyComputerDataset", "gnn-benchmark", "amazon_co_buy_computer",
                "accuracy", 13752, 491722, 10, 767, "60/20/20%"),
    NodeSetSpec("amazon-photo", "AmazonCoBuyPhotoDataset", "gnn-benchmark", "amazon_co_buy_photo", "accuracy", 7650,
                238163, 8, 745, "60/20/20%"),
    NodeSetSpec("coauthor-cs", "CoauthorCSDataset", "gnn-benchmark", "coauthor_cs", "accuracy", 18333, 163788, 15,
                6805, "60/20/20%"),
    NodeSetSpec("coauthor-physics", "CoauthorPhysicsDataset", "gnn-benchmark", "coauthor_physics", "accuracy", 34493,
                495924, 5, 8415, "60/20/20%"),
    NodeSetSpec("wikics", "WikiCSDataset", "wikics", "wiki_cs", "accuracy", 11701, 431726, 10, 300,
                "580/1,769/5,847"),
)}


def is_node_set(name: Optional[str]) -> bool:
    """Whether ``name`` is one of :data:`NODE_SETS` (case-insensitive)."""
    return name is not None and str(name).lower() in NODE_SETS


def node_set_spec(name: str) -> NodeSetSpec:
    key = str(name).lower()
    if key not in NODE_SETS:
        raise DataError(f"unknown node set {name!r}; choose one of {', '.join(NODE_SETS)}")
    return NODE_SETS[key]


def raw_folder(name: str, data_dir: PathLike) -> Path:
    """``<data_dir>/<dgl name>_<sha1(url)[:8]>``: where DGL's loader keeps ``name``'s files."""
    spec = node_set_spec(name)
    suffix = hashlib.sha1(spec.url().encode("utf-8")).hexdigest()[:8]
    return Path(data_dir).expanduser() / f"{spec.dgl_name}_{suffix}"


def expected_files(name: str) -> List[str]:
    """The raw files DGL's loader reads from the folder (names relative to :func:`raw_folder`)."""
    spec = node_set_spec(name)
    if spec.family == "planetoid":
        return [f"ind.{spec.dgl_name}.{part}" for part in ("x", "y", "tx", "ty", "allx", "ally", "graph",
                                                            "test.index")]
    if spec.family == "geom-gcn":
        return ["out1_graph_edges.txt", "out1_node_feature_label.txt"] + [
            f"{spec.dgl_name}_split_0.6_0.2_{k}.npz" for k in range(GEOM_GCN_SPLITS)]
    if spec.family in ("heterophilous", "gnn-benchmark"):
        return [f"{spec.dgl_name}.npz"]
    return ["data.json"]


def processed_files(name: str) -> List[str]:
    """DGL's processed cache in the folder; when all are there DGL reads no raw file."""
    spec = node_set_spec(name)
    return {"planetoid": [f"{spec.dgl_name}_dgl_graph.bin", f"{spec.dgl_name}_dgl_graph.pkl"],
            "gnn-benchmark": ["dgl_graph_v1.bin"], "wikics": ["dgl_graph.bin"]}.get(spec.family, [])


def missing_files(name: str, data_dir: PathLike) -> List[str]:
    """The raw files of ``name`` not in its folder (none when DGL's processed cache is complete)."""
    folder = raw_folder(name, data_dir)
    cached = processed_files(name)
    if cached and all((folder / f).is_file() for f in cached):
        return []
    return [f for f in expected_files(name) if not (folder / f).is_file()]


def node_set_present(name: str, data_dir: PathLike) -> bool:
    """Whether DGL can read ``name`` from ``data_dir`` without a download."""
    return raw_folder(name, data_dir).is_dir() and not missing_files(name, data_dir)


def describe_files(files: List[str]) -> str:
    """``a, b and c_{0..9}.npz``: a file list short enough for one line (numbered files folded)."""
    numbered = [f for f in files if f.rsplit("_", 1)[-1].split(".")[0].isdigit() and f.endswith(".npz")]
    rest = [f for f in files if f not in numbered]
    if len(numbered) > 2:
        stem = numbered[0].rsplit("_", 1)[0]
        ids = sorted(int(f.rsplit("_", 1)[-1].split(".")[0]) for f in numbered)
        if all(f.rsplit("_", 1)[0] == stem for f in numbered) and ids == list(range(ids[0], ids[-1] + 1)):
            rest.append(f"{stem}_{{{ids[0]}..{ids[-1]}}}.npz")
        else:
            rest += numbered
    else:
        rest += numbered
    return rest[0] if len(rest) == 1 else ", ".join(rest[:-1]) + " and " + rest[-1]


def _where(name: str, data_dir: PathLike) -> str:
    return f"put {describe_files(expected_files(name))} in {raw_folder(name, data_dir)}/"


@contextlib.contextmanager
def _dgl_output_to_log(name: str):
    """DGL's loaders print progress and tracebacks on stdout / stderr: send them to the debug log."""
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            yield
    finally:
        for line in sink.getvalue().splitlines():
            if line.strip():
                log.debug("%s (DGL): %s", name, line)


def _files_stamp(folder: Path, files: List[str]) -> str:
    """Size and mtime of the files DGL read: the version of the data (PE caches, the in-process memo)."""
    parts = []
    for f in files:
        path = folder / f
        if path.is_file():
            stat = path.stat()
            parts.append(f"{f}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def _stamp(name: str, folder: Path) -> str:
    raw = expected_files(name)
    files = raw if all((folder / f).is_file() for f in raw) else processed_files(name)
    return _files_stamp(folder, files)


#: The last graph DGL's loader returned, by (name, folder, stamp): the run's settings and its training read the
#: data once (the geom-gcn and heterophilous loaders parse their raw files on every read).
_LAST_READ: Dict[Tuple[str, str, str], Tuple[dgl.DGLGraph, int]] = {}


def _must_write(name: str, folder: Path) -> bool:
    """Whether DGL's loader of ``name`` will write its processed files into ``folder`` (not there yet)."""
    cached = processed_files(name)
    return bool(cached) and not all((folder / f).is_file() for f in cached)


def _write_refused(exc: BaseException) -> bool:
    """Whether ``exc`` (often DGL's C++ error, stack trace included) says a file could not be written."""
    text = str(exc)
    return isinstance(exc, PermissionError) or any(words in text for words in (
        "Permission denied", "Operation not permitted", "Read-only file system"))


def _read_only(spec: NodeSetSpec, folder: Path, data_dir: Path) -> DataError:
    return DataError(f"{spec.name}: DGL's {spec.dgl_class} writes its processed files "
                     f"({describe_files(processed_files(spec.name))}) into {folder} on the first read, but that "
                     f"folder is read-only; copy {data_dir} to a writable place (e.g. cp -r {data_dir} "
                     f"/tmp/dgl-data) and pass that as --data-dir")


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of ``exc``'s text, at most ``limit`` characters (DGL's C++ errors carry a stack trace)."""
    lines = str(exc).strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _dgl_dataset(spec: NodeSetSpec, data_dir: Path):
    import dgl.data

    with _dgl_output_to_log(spec.name):
        return getattr(dgl.data, spec.dgl_class)(raw_dir=os.fspath(data_dir), verbose=False)


def read_node_set(name: str, data_dir: PathLike) -> Tuple[dgl.DGLGraph, int, str]:
    """``name`` as DGL's loader returns it -> (graph, classes, stamp of the files).

    The graph holds ``ndata['feat']``, ``['label']`` and DGL's masks, ``(N,)``
    or ``(N, S)`` bool (one column per public split). Do not modify it: it is
    kept for the next read of the same files in this process.

    Raises
    ------
    DataError
        Files missing from an existing folder; a download that failed
        (offline): one line naming the files and the folder they go in;
        files DGL could not read.
    """
    spec = node_set_spec(name)
    data_dir = Path(data_dir).expanduser()
    folder = raw_folder(spec.name, data_dir)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()  # left empty by a failed download: DGL downloads only into a missing folder
    if folder.is_dir():
        missing = missing_files(spec.name, data_dir)
        if missing:
            raise DataError(f"{spec.name}: {folder} lacks {describe_files(missing)}; {_where(spec.name, data_dir)} "
                            f"(DGL's {spec.dgl_class} files), or remove the folder so that DGL downloads them")
        key = (spec.name, os.fspath(folder.resolve()), _stamp(spec.name, folder))
        if key in _LAST_READ:
            graph, classes = _LAST_READ[key]
            return graph, classes, key[2]
    downloading = not folder.is_dir()
    made = [d for d in (data_dir, *data_dir.parents) if not d.exists()]  # folders a failed download must not leave
    if not downloading and _must_write(spec.name, folder) and not os.access(folder, os.W_OK):
        raise _read_only(spec, folder, data_dir)
    if downloading:
        log.info("%s: DGL's %s downloads %s into %s", spec.name, spec.dgl_class, spec.url(), folder)
    try:
        dataset = _dgl_dataset(spec, data_dir)
        graph = dataset[0]
    except Exception as exc:
        if downloading:
            for empty in [folder, *made]:  # innermost first
                if empty.is_dir() and not any(empty.iterdir()):
                    empty.rmdir()
            raise DataError(f"{spec.name}: DGL's {spec.dgl_class} could not download {spec.url()} "
                            f"({type(exc).__name__}); offline, {_where(spec.name, data_dir)}") from exc
        if _must_write(spec.name, folder) and (not os.access(folder, os.W_OK) or _write_refused(exc)):
            raise _read_only(spec, folder, data_dir) from exc
        raise DataError(f"{spec.name}: DGL's {spec.dgl_class} could not read {folder} ({type(exc).__name__}: "
                        f"{_first_line(exc)}); replace its files with DGL's "
                        f"({describe_files(expected_files(spec.name))})") from exc
    classes = max(2, int(graph.ndata["label"].max()) + 1)
    stamp = _stamp(spec.name, folder)
    _LAST_READ.clear()
    _LAST_READ[(spec.name, os.fspath(folder.resolve()), stamp)] = (graph, classes)
    return graph, classes, stamp


def dgl_masks(graph: dgl.DGLGraph) -> Dict[str, torch.Tensor]:
    """DGL's ``train_mask`` / ``val_mask`` / ``test_mask`` as ``{'train': ..., 'val': ..., 'test': ...}``."""
    return {split: graph.ndata[f"{split}_mask"] for split in SPLITS}


def node_set_splits(name: str, data_dir: PathLike) -> int:
    """How many splits ``name`` has (``--splits all`` trains on each): its public splits, 1 for a seeded split."""
    spec = node_set_spec(name)
    if spec.seeded:
        return 1
    graph, _, _ = read_node_set(name, data_dir)
    return split_count(dgl_masks(graph))


def published_split_count(name: str) -> int:
    """How many splits ``name`` publishes (:data:`PUBLISHED_SPLITS`; what ``--dry-run`` checks indices against
    without reading the data)."""
    return PUBLISHED_SPLITS[node_set_spec(name).family]


def check_split_index_unread(name: str, split_index: int) -> None:
    """:func:`~.node_splits.check_split_index` against the published count, without reading the data."""
    spec = node_set_spec(name)
    where = _SEEDED_WHERE.format(name=spec.name) if spec.seeded else spec.name
    check_split_index(split_index, published_split_count(name), where)


def node_set_shape(name: str, data_dir: PathLike, split_index: int = 0) -> Tuple[int, int]:
    """``(feature width, classes)`` of ``name``, the split index checked (what a run's settings need; the
    graph itself is not copied)."""
    spec = node_set_spec(name)
    source, classes, _ = read_node_set(name, data_dir)
    if spec.seeded:
        check_split_index(split_index, 1, _SEEDED_WHERE.format(name=spec.name))
    else:
        check_split_index(split_index, split_count(dgl_masks(source)), spec.name)
    return int(source.ndata["feat"].shape[1]), classes


def split_description(name: str, split_index: int, split_seed: int, count: int) -> str:
    """The split as the run log states it."""
    spec = node_set_spec(name)
    if spec.seeded:
        return f"seeded 60/20/20 split (torch.randperm, data.split_seed={split_seed})"
    if count == 1:
        return spec.split_kind
    return f"split {split_index} of {count} ({SPLIT_SOURCES[spec.family]})"


def node_set_graph(name: str, data_dir: PathLike, split_index: int = 0, split_seed: int = 0
                   ) -> Tuple[dgl.DGLGraph, int, str, str]:
    """``name``'s graph with the ``(N,)`` masks of one split -> (graph, classes, stamp, split description).

    Parameters
    ----------
    split_index : int
        The public split (column of DGL's ``(N, S)`` masks); 0 for sets with one.
    split_seed : int
        Seed of the 60/20/20 split of the sets that publish none.
    """
    spec = node_set_spec(name)
    source, classes, stamp = read_node_set(name, data_dir)
    src, dst = source.edges()
    graph = dgl.graph((src, dst), num_nodes=source.num_nodes())
    if spec.family == "geom-gcn":
        graph = dgl.to_bidirected(graph)
    # copies: the source stays as DGL returned it for the next read (another split of a --splits study)
    graph.ndata["feat"] = source.ndata["feat"].float().clone()
    graph.ndata["label"] = source.ndata["label"].long().clone()
    graph.edata["feat"] = torch.zeros(graph.num_edges(), 1)  # no edge features: one constant, as for graph files
    if spec.seeded:
        check_split_index(split_index, 1, _SEEDED_WHERE.format(name=spec.name))
        masks = seeded_split(graph.num_nodes(), split_seed)
        count = 1
    else:
        found = dgl_masks(source)
        count = split_count(found)
        masks = select_split(found, split_index, name)
    for split, mask in masks.items():
        graph.ndata[f"{split}_mask"] = mask.clone()
    return graph, classes, stamp, split_description(name, split_index, split_seed, count)


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "sym"


def load_node_set(name: str, options: LoadOptions):
    """``name`` as a :class:`~.node_graph.NodeGraph` of one split, positional encodings cached.

    Parameters
    ----------
    name : str
        One of :data:`NODE_SETS`.
    options : LoadOptions
        ``data_dir``: DGL's ``raw_dir`` (e.g. ``~/.dgl``). ``split_index``, ``split_seed``: see
        :func:`node_set_graph`. ``pe_k`` (default 0), ``rwse_k``, ``laplacian_norm`` (default ``'sym'``):
        encodings to attach, cached in ``<data_dir>/geaet_cache/<name>`` (keyed by the files' sizes and
        mtimes). ``limit_train``, ``limit_val``, ``limit_test``: keep the first N nodes of a mask (the graph
        stays whole).
    """
    from .node_graph import NodeGraph, check_masks, limit_masks, node_labels
    from ..encodings.apply import EncodingCache, EncodingPlan
    from ..encodings.pe_cache import writable_cache_dir

    data_dir, split_index, split_seed = options.data_dir, options.split_index, options.split_seed
    spec = node_set_spec(name)
    graph, classes, stamp, split = node_set_graph(spec.name, data_dir, split_index, split_seed)
    folder = raw_folder(spec.name, data_dir)
    where = f"{spec.name} ({folder})"
    check_masks([graph], where)
    task, outputs = node_labels(graph, where, "node-classification")
    limit_masks(graph, options.limit_of)
    cache = writable_cache_dir(Path(data_dir).expanduser() / "geaet_cache" / spec.name, f"node-set-{spec.name}")
    data = NodeGraph(graph, task, max(classes, outputs), name=spec.name, cache_dir=cache, stamp=stamp,
                     source=f"DGL's {spec.dgl_class} from {folder}, {split}")
    data.split_index = split_index
    data.encoding_plan = EncodingPlan({"graph": EncodingCache(cache, spec.name, stamp)},
                                      default_norm=DEFAULT_LAPLACIAN_NORM)
    return data
