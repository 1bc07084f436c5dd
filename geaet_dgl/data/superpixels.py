"""MNIST images -> SLIC superpixels, in the layout of the published ``mnist_75sp`` pickles.

Follows the recipe that produced the Benchmarking-GNNs MNIST superpixels
(``extract_superpixels.py`` of bknyaz/graph_attention_pool):

* pixels scaled to [0, 1] as ``uint8 / 255`` (float32);
* ``skimage.segmentation.slic(img, n_segments=q, compactness=0.25)`` on the
  grayscale image, starting at ``q = n_sp + 20 = 95`` and lowering ``q`` by one
  until at most ``n_sp = 75`` segments come out;
* per segment: mean intensity and centre of mass ``(row, col)`` in pixels;
* the segment order is randomly permuted (the recipe's ``shuffle=True``);
  here with a per-image seeded generator so builds are reproducible for any
  number of worker processes.

One pickle per split holds ``(labels, sp_data)``: ``labels`` int32 ``(n,)``
and ``sp_data`` a list with one ``(intensity, coord, order)`` tuple per
image: ``intensity`` float32 ``(n_sp_i, 1)``, ``coord`` float32
``(n_sp_i, 2)`` (row, col in pixels), ``order`` int32 ``(n_sp_i,)`` (the SLIC
label of each node). DGL's ``MNISTSuperPixelDataset`` reads ``sample[:2]``.

Locally built superpixels follow the recipe but are not byte-identical to the
published pickles: scikit-image's SLIC changed since 2019 (it now rescales
the image to [0, 1] by its min/max, takes ``channel_axis`` instead of
``multichannel`` and derives its small-segment threshold from the number of
grid seeds; :func:`legacy_size_factors` undoes the last change, which alone
moves the mean superpixel count from 67.3 to the published 70.6) and the node
permutation uses a different random stream.
"""

import multiprocessing
import os
import pickle
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
from scipy import ndimage
from skimage.segmentation import slic
from skimage.util import regular_grid
from tqdm.auto import tqdm

from ..atomic import atomic_write
from .errors import DataError

PathLike = Union[str, os.PathLike]

#: One image's superpixels: intensity (n, 1) f32, coord (n, 2) f32 (row, col), order (n,) int32.
SuperpixelRecord = Tuple[np.ndarray, np.ndarray, np.ndarray]

MNIST_N_SP = 75
MNIST_COMPACTNESS = 0.25
MNIST_QUERY_SURPLUS = 20  # the recipe starts SLIC at n_sp + 20 segments for MNIST
RECIPE_SEED = 111  # the recipe's default --seed
SLIC_MIN_SIZE_FACTOR = 0.5  # skimage defaults, then and now
SLIC_MAX_SIZE_FACTOR = 3.0


def legacy_size_factors(shape: Tuple[int, int], n_segments: int) -> Tuple[float, float]:
    """SLIC size factors that reproduce 2019 scikit-image's connectivity thresholds.

    scikit-image < 0.17 merged segments smaller than
    ``int(0.5 * H * W / n_segments)`` pixels (the *requested* count); newer
    versions divide by the number of grid seeds actually placed, which for
    28x28 MNIST gives a lower threshold and about 3 fewer superpixels per
    image on average (67.3 vs the published 70.6). Passing these factors to a
    new ``slic`` restores the old integer thresholds exactly.

    Parameters
    ----------
    shape : (int, int)
        Image height and width.
    n_segments : int
        The ``n_segments`` passed to ``slic``.

    Returns
    -------
    min_size_factor, max_size_factor : float
    """
    grid = (1, *shape)
    slices = regular_grid(grid, n_segments)
    n_seeds = int(np.prod([len(range(*s.indices(size))) for s, size in zip(slices, grid)]))
    new_segment_size = float(np.prod(shape)) / n_seeds
    old_segment_size = float(np.prod(shape)) / n_segments
    old_min = int(SLIC_MIN_SIZE_FACTOR * old_segment_size)
    old_max = int(SLIC_MAX_SIZE_FACTOR * old_segment_size)
    # +0.5 keeps int(factor * new_segment_size) on the old integer despite rounding.
    return (old_min + 0.5) / new_segment_size, (old_max + 0.5) / new_segment_size


def extract_superpixels(
    image: np.ndarray,
    n_sp: int = MNIST_N_SP,
    compactness: float = MNIST_COMPACTNESS,
    rng: Optional[np.random.Generator] = None,
    shuffle: bool = True,
    legacy_slic: bool = True,
) -> SuperpixelRecord:
    """SLIC superpixels of one grayscale uint8 image, per the mnist_75sp recipe.

    Parameters
    ----------
    image : np.ndarray
        ``(H, W)`` uint8 (0..255).
    n_sp : int
        Upper bound on the number of superpixels (75 for MNIST).
    compactness : float
        SLIC compactness (0.25 for MNIST).
    rng : np.random.Generator, optional
        Source of the node permutation; a fresh unseeded one if ``None``.
    shuffle : bool
        Permute the node order as the recipe does (default) or keep SLIC
        label order.
    legacy_slic : bool
        Run SLIC as 2019 scikit-image did (float64 image, connectivity
        thresholds from the requested segment count, see
        :func:`legacy_size_factors`); ``False`` uses today's defaults.

    Returns
    -------
    intensity : np.ndarray
        ``(n, 1)`` float32 mean pixel value of each superpixel, in [0, 1].
    coord : np.ndarray
        ``(n, 2)`` float32 centre of mass ``(row, col)`` in pixel units.
    order : np.ndarray
        ``(n,)`` int32 SLIC label of each node, ``1 <= n <= n_sp``.
    """
    image = np.asarray(image)
    if image.ndim != 2 or image.dtype != np.uint8:
        raise DataError(
            f"superpixel input must be a 2-d uint8 image, got {image.dtype} {image.shape}; pass raw MNIST pixels"
        )
    img = (image / 255.0).astype(np.float32)
    slic_input = img.astype(np.float64) if legacy_slic else img

    n_query = n_sp + MNIST_QUERY_SURPLUS
    while True:
        if n_query < 1:
            raise DataError(f"SLIC never gave <= {n_sp} segments for an image; raise n_sp")
        min_factor, max_factor = (
            legacy_size_factors(img.shape, n_query) if legacy_slic else (SLIC_MIN_SIZE_FACTOR, SLIC_MAX_SIZE_FACTOR)
        )
        segments = slic(
            slic_input,
            n_segments=n_query,
            compactness=compactness,
            channel_axis=None,
            start_label=0,
            min_size_factor=min_factor,
            max_size_factor=max_factor,
        )
        labels = np.unique(segments)
        n_query -= 1
        if len(labels) <= n_sp:
            break

    if shuffle:
        perm = (rng if rng is not None else np.random.default_rng()).permutation(len(labels))
    else:
        perm = np.arange(len(labels))
    order = labels[perm].astype(np.int32)
    intensity = np.asarray(ndimage.mean(img, labels=segments, index=order), dtype=np.float32).reshape(-1, 1)
    coord = np.asarray(
        ndimage.center_of_mass(np.ones_like(img), labels=segments, index=order), dtype=np.float32
    ).reshape(-1, 2)
    return intensity, coord, order


def _extract_chunk(task) -> List[SuperpixelRecord]:
    """Worker: superpixels of ``images`` numbered from ``start``, one seeded generator each."""
    start, images, seed, n_sp, compactness, legacy_slic = task
    return [
        extract_superpixels(
            img, n_sp, compactness, rng=np.random.default_rng([seed, start + i]), legacy_slic=legacy_slic
        )
        for i, img in enumerate(images)
    ]


def build_superpixels(
    images: np.ndarray,
    seed: int = RECIPE_SEED,
    workers: Optional[int] = None,
    progress: bool = True,
    desc: str = "SLIC superpixels",
    n_sp: int = MNIST_N_SP,
    compactness: float = MNIST_COMPACTNESS,
    chunk_size: int = 64,
    legacy_slic: bool = True,
) -> List[SuperpixelRecord]:
    """Superpixels of many images, in parallel over processes.

    Parameters
    ----------
    images : np.ndarray
        ``(n, H, W)`` uint8.
    seed : int
        Node permutation of image ``i`` uses ``np.random.default_rng([seed, i])``,
        so the result does not depend on ``workers``.
    workers : int, optional
        Processes; defaults to ``os.cpu_count()``. ``1`` runs in-process.
    progress : bool
        Show a tqdm bar.
    desc : str
        Progress bar label.
    n_sp, compactness : int, float
        SLIC settings (MNIST recipe defaults).
    chunk_size : int
        Images per worker task.
    legacy_slic : bool
        See :func:`extract_superpixels`.

    Returns
    -------
    list of (intensity, coord, order)
        One record per image, in input order (see :func:`extract_superpixels`).
    """
    images = np.asarray(images)
    if images.ndim != 3:
        raise DataError(f"expected a stack of images (n, H, W), got shape {images.shape}; pass MNIST images")
    workers = max(1, int(workers or os.cpu_count() or 1))
    tasks = [
        (start, images[start : start + chunk_size], seed, n_sp, compactness, legacy_slic)
        for start in range(0, len(images), chunk_size)
    ]
    records: List[SuperpixelRecord] = []
    with tqdm(total=len(images), desc=desc, disable=not progress, unit="img") as bar:
        if workers == 1 or len(tasks) <= 1:
            chunks = map(_extract_chunk, tasks)
            for chunk in chunks:
                records.extend(chunk)
                bar.update(len(chunk))
        else:
            with multiprocessing.get_context().Pool(processes=min(workers, len(tasks))) as pool:
                for chunk in pool.imap(_extract_chunk, tasks):
                    records.extend(chunk)
                    bar.update(len(chunk))
    return records


def write_superpixel_pickle(path: PathLike, labels: np.ndarray, records: Sequence[SuperpixelRecord]) -> None:
    """Write one split as the recipe does: ``pickle.dump((labels int32, sp_data))`` (atomically).

    Parameters
    ----------
    path : path-like
        E.g. ``.../superpixels/mnist_75sp_train.pkl``.
    labels : np.ndarray
        ``(n,)`` integer classes.
    records : sequence of (intensity, coord, order)
        ``n`` records from :func:`build_superpixels`.
    """
    labels = np.asarray(labels)
    if labels.shape != (len(records),):
        raise DataError(f"{labels.shape[0]} labels for {len(records)} superpixel records; pass one label per image")
    with atomic_write(path) as handle:
        pickle.dump((labels.astype(np.int32), [tuple(r) for r in records]), handle, protocol=4)


def read_superpixel_pickle(path: PathLike) -> Tuple[np.ndarray, List[SuperpixelRecord]]:
    """Read a ``mnist_75sp_<split>.pkl`` (published or built here).

    Returns
    -------
    labels : np.ndarray
        ``(n,)`` int32.
    sp_data : list
        ``n`` records; ``sp_data[i][:2]`` is ``(intensity (n_i, 1), coord (n_i, 2))``.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            labels, sp_data = pickle.load(handle, encoding="latin1")
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise DataError(f"cannot read superpixel pickle {path} ({exc}); delete it to rebuild") from exc
    return np.asarray(labels), list(sp_data)
