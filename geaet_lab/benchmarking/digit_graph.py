"""A k-NN graph of MNIST digits with few labels: GEAET with a graph file's defaults beside a 2-layer GCN.

The graph of issue 27's sparse-label check: every image (the 60,000 training
images of MNIST, then the 10,000 test images, the first ``images`` of them) is
a node with its 784 pixels / 255 as features and its digit as label, joined
both ways to its ``k`` nearest images in pixel space
(:func:`~geaet_dgl.data.generated.node_graphs.knn_graph`); ``train`` random
nodes are labelled, ``val`` more score the epochs, the rest are the test set.

:func:`digit_knn_graph` builds it, :func:`write_digit_graph` writes it as a
graph file with node masks (what ``train --dataset FILE.bin`` reads), and
:func:`compare_on_digit_graph` trains GEAET on the file with the ``geaet-node``
preset's defaults and each requested ``--sampler``, beside DGL's 2-layer
``GraphConv`` GCN and a 2-layer MLP on the same file and seeds
(:func:`~.node_baselines.compare_with_baselines`).
``benchmarks/digits_vs_gcn.py`` runs it (docs/node-classification.md#a-digit-graph-with-200-labels).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import dgl
import torch

from geaet_dgl.data.generated.node_graphs import knn_graph, with_masks

PathLike = Union[str, os.PathLike]
#: MNIST's image files in the order their images become nodes (training images first).
IMAGE_FILES = (("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))


def read_digits(folder: PathLike, images: int) -> "tuple[torch.Tensor, torch.Tensor]":
    """The first ``images`` MNIST images of ``folder``'s IDX files (training images, then test images):
    -> ``(pixels / 255 as (images, 784) float32, digits as (images,) int64)``."""
    from geaet_dgl.data.superpixels.idx import find_idx_file, read_idx

    pixels, digits = [], []
    for image_stem, label_stem in IMAGE_FILES:
        image_path, label_path = find_idx_file(folder, image_stem), find_idx_file(folder, label_stem)
        if image_path is None or label_path is None:
            raise FileNotFoundError(f"{folder} has no {image_stem} / {label_stem} (MNIST's IDX files, .gz or not)")
        pixels.append(torch.from_numpy(read_idx(image_path).copy()))
        digits.append(torch.from_numpy(read_idx(label_path).copy()))
        if sum(len(p) for p in pixels) >= images:
            break
    pixels, digits = torch.cat(pixels)[:images], torch.cat(digits)[:images]
    if len(pixels) < images:
        raise ValueError(f"images={images} but {folder} holds {len(pixels)} MNIST images")
    return pixels.reshape(images, -1).float() / 255.0, digits.long()


def digit_knn_graph(pixels: torch.Tensor, digits: torch.Tensor, k: int = 10, train: int = 200, val: int = 500,
                    seed: int = 0) -> dgl.DGLGraph:
    """The ``k``-NN graph of ``pixels`` (N, F) with ``feat``, ``label`` = ``digits`` (N,) and a seeded random split:
    ``train`` labelled nodes, ``val`` validation nodes, the rest test."""
    n = pixels.shape[0]
    if train < 1 or val < 1 or train + val >= n:
        raise ValueError(f"train={train} and val={val} must be positive and leave test nodes among {n}")
    return with_masks(knn_graph(pixels, k), pixels, digits, (train / n, val / n, 1 - (train + val) / n), seed)


def write_digit_graph(path: PathLike, folder: PathLike, images: int = 70000, k: int = 10, train: int = 200,
                      val: int = 500, seed: int = 0) -> dgl.DGLGraph:
    """Build :func:`digit_knn_graph` from the MNIST IDX files in ``folder`` and save it to ``path``; -> the graph."""
    pixels, digits = read_digits(folder, images)
    graph = digit_knn_graph(pixels, digits, k, train, val, seed)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    dgl.save_graphs(os.fspath(path), [graph])
    return graph


def compare_on_digit_graph(graph_file: PathLike, out: PathLike, samplers: Sequence[str] = ("cluster",),
                           seeds: Sequence[int] = (0,), overrides: Optional[Mapping[str, Any]] = None,
                           threads: int = 1, progress: bool = False) -> Dict[str, Dict[str, Any]]:
    """GEAET (preset ``geaet-node``, ``--sampler S`` for each of ``samplers``), the 2-layer GCN and the 2-layer MLP
    on ``graph_file``, every seed; -> ``{row name: row}`` (rows of
    :func:`~.node_baselines.compare_with_baselines`; GEAET's named ``geaet (--sampler S)``)."""
    from .node_baselines import compare_with_baselines

    table: Dict[str, Dict[str, Any]] = {}
    for index, sampler in enumerate(samplers):
        rows = compare_with_baselines([graph_file], Path(out) / sampler, seeds=seeds,
                                      overrides={**(overrides or {}), "data.sampler": sampler}, threads=threads,
                                      skip_baselines=index > 0, progress=progress)
        table[f"geaet (--sampler {sampler})"] = rows.pop("geaet")
        table.update(rows)
    return table
