"""CIFAR10 superpixel graphs (Benchmarking-GNNs / GEAET setting) as DGL graphs with Laplacian PE.

Routes, tried in order (the flow is :mod:`.loader`'s, shared with MNIST):

1. ``data_dir`` already holds DGL's CIFAR10 superpixel files (raw
   ``cifar10_150sp_{train,test}.pkl`` and/or DGL's processed
   ``CIFAR10_{train,test}.pkl``, in DGL's layout, see :mod:`.dgl_files`;
   loose ``cifar10_150sp_*.pkl`` directly in ``data_dir`` or
   ``data_dir/superpixels`` are linked into it);
2. otherwise the raw pickles are built here from the CIFAR-10 python batches
   (``cifar_images``: ``cifar-10-batches-py/``, see :mod:`.cifar10_images`)
   with the published SLIC recipe (``-D cifar10 -n 150 -c 10``:
   :data:`.slic.CIFAR10_RECIPE`) and written in DGL's layout. Such a
   build follows the recipe but is **not byte-identical** to the published
   pickles (scikit-image's SLIC changed since; see :mod:`.slic`); the
   log says so.

Either way DGL's own ``CIFAR10SuperPixelDataset`` processing turns the pickles
into kNN graphs (offline: it can never download).

Split (Benchmarking-GNNs ``SuperPixDatasetDGL``, hence PyG's
``GNNBenchmarkDataset`` that GEAET uses): validation = the *first* 5000 graphs
of the 50k training pickle, train = the other 45000, test = the 10k test
pickle.

Features: ``ndata['feat']`` (N, 5) float32 = (mean r, g, b in [0, 1],
row/32, col/32) - DGL's and Benchmarking-GNNs' order, which is also GEAET's
``cat(x, pos)`` on PyG's CIFAR10; ``edata['feat']`` = kNN weight (E, 1); plus
``ndata['lap_pe']`` and ``ndata['lap_eigval']`` (N, k), cached on disk per
split (tagged ``cifar10_*``: MNIST shares the folder).
"""

import os
from typing import Optional, Union

from ..dataset import DatasetSplits
from ..options import LoadOptions
from .cifar10_images import CIFAR_FOLDER, load_cifar10_images
from .dgl_files import CIFAR10_SPEC, SuperpixelLayout, superpixel_layout
from .loader import ImageRoute, build_superpixel_pickles, load_superpixel_splits, superpixel_options
from .slic import CIFAR10_RECIPE, RECIPE_SEED, build_superpixels, write_superpixel_pickle

PathLike = Union[str, os.PathLike]
CIFAR10_NUM_CLASSES = 10
CIFAR10_NUM_VAL = 5000


def build_cifar10_superpixels(
    layout: SuperpixelLayout,
    cifar_images: PathLike,
    needed: dict,
    workers: Optional[int] = None,
    seed: int = RECIPE_SEED,
    progress: bool = True,
) -> dict:
    """Build ``cifar10_150sp_{train,test}.pkl`` from the CIFAR-10 python batches into ``layout``.

    ``cifar_images`` is ``cifar-10-batches-py/`` or the folder holding it;
    ``layout`` a CIFAR10 layout (``superpixel_layout(data_dir, CIFAR10_SPEC)``);
    the rest as :func:`.loader.build_superpixel_pickles`, which
    returns the build note.
    """
    return build_superpixel_pickles(layout, load_cifar10_images(cifar_images), needed, CIFAR10_RECIPE, seed,
                                    workers, progress, extract=build_superpixels, write=write_superpixel_pickle)


def cifar10_image_route(
    cifar_images: Optional[PathLike], workers: Optional[int] = None, seed: int = RECIPE_SEED, progress: bool = True
) -> ImageRoute:
    """CIFAR-10 images from the python batches in ``cifar_images`` (no other source)."""
    def build(layout: SuperpixelLayout, needed: dict) -> dict:
        return build_cifar10_superpixels(layout, cifar_images, needed, workers, seed, progress)

    return ImageRoute(available=cifar_images is not None, missing="no cifar_images folder", build=build,
                      hint=f"pass cifar_images=<folder with {CIFAR_FOLDER}: data_batch_1..5, test_batch>")


def load_cifar10(options: LoadOptions) -> DatasetSplits:
    """CIFAR10 superpixel graphs split 45k/5k/10k, with Laplacian PE.

    Parameters
    ----------
    options : LoadOptions
        ``data_dir``: DGL ``raw_dir`` of the dataset: read if it holds the files, else the raw pickles
        are built into it (see module docstring). ``cifar_images``: ``cifar-10-batches-py/`` (or its
        parent), used only when building. ``pe_k``: Laplacian eigenpairs per graph (default 8, as GEAET
        CIFAR10). ``limit_train``, ``limit_val``, ``limit_test``: keep only the first ``n`` graphs of a
        split; a build processes only the ``num_val + limit_train`` train and ``limit_test`` test images
        needed. ``laplacian_norm``, ``progress``, ``rwse_k``, ``workers``, ``seed``: as for
        :func:`.mnist.load_mnist`. ``num_val``: validation graphs taken from the start of the training
        pickle (default 5000).

    Returns
    -------
    DatasetSplits
        ``train``/``val``/``test`` of ``(graph, label int64)``; each graph has
        ``ndata['feat']`` (N, 5), ``edata['feat']`` (E, 1),
        ``ndata['lap_pe']`` (N, k), ``ndata['lap_eigval']`` (N, k) (float32).
    """
    route = cifar10_image_route(options.cifar_images, workers=options.workers,
                                seed=options.or_default("seed", RECIPE_SEED), progress=options.progress)
    return load_superpixel_splits(superpixel_layout(options.data_dir, CIFAR10_SPEC), route, "cifar10",
                                  CIFAR10_NUM_CLASSES, superpixel_options(options, CIFAR10_NUM_VAL))
