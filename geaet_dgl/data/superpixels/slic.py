"""MNIST / CIFAR-10 images -> SLIC superpixels, in the layout of the published pickles.

Follows the recipe that produced the Benchmarking-GNNs superpixels
(``extract_superpixels.py`` of bknyaz/graph_attention_pool; MNIST
``mnist_75sp``: ``-n 75 -c 0.25``, CIFAR-10 ``cifar10_150sp``: ``-D cifar10
-n 150 -c 10``, see :data:`MNIST_RECIPE` / :data:`CIFAR10_RECIPE`):

* pixels scaled to [0, 1] as ``uint8 / 255`` (float32);
* ``skimage.segmentation.slic(img, n_segments=q, compactness=c)`` on the
  grayscale image (MNIST) or the RGB image (CIFAR-10, which SLIC converts to
  CIE-Lab), starting at ``q = n_sp + 20`` (MNIST) or ``n_sp + 50`` (CIFAR-10)
  and lowering ``q`` by one until at most ``n_sp`` segments come out;
* per segment: mean value of each channel and centre of mass ``(row, col)``
  in pixels;
* the segment order is randomly permuted (the recipe's ``shuffle=True``);
  here with a per-image seeded generator so builds are reproducible for any
  number of worker processes.

One pickle per split holds ``(labels, sp_data)``: ``labels`` int32 ``(n,)``
and ``sp_data`` a list with one ``(intensity, coord, order)`` tuple per
image: ``intensity`` float32 ``(n_sp_i, C)`` (C = 1 grey, 3 RGB), ``coord``
float32 ``(n_sp_i, 2)`` (row, col in pixels), ``order`` int32 ``(n_sp_i,)``
(the SLIC label of each node). DGL's ``MNISTSuperPixelDataset`` /
``CIFAR10SuperPixelDataset`` read ``sample[:2]``.

Locally built superpixels follow the recipe but are not byte-identical to the
published pickles: scikit-image's SLIC changed since 2019 (it now rescales
the image to [0, 1] by its min/max, takes ``channel_axis`` instead of
``multichannel`` and derives its small-segment threshold from the number of
grid seeds; :func:`legacy_size_factors` undoes the last change, which alone
moves the mean MNIST superpixel count from 67.3 to the published 70.6, and
for colour images :func:`_legacy_colour_slic` undoes the rescaling) and the
node permutation uses a different random stream.
"""

import multiprocessing
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
from scipy import ndimage
from skimage.color import rgb2lab
from skimage.segmentation import slic
from skimage.util import regular_grid
from tqdm.auto import tqdm

from ...atomic import atomic_write
from ...threads import current_threads
from ..errors import DataError

PathLike = Union[str, os.PathLike]

#: One image's superpixels: intensity (n, C) f32, coord (n, 2) f32 (row, col), order (n,) int32.
SuperpixelRecord = Tuple[np.ndarray, np.ndarray, np.ndarray]

MNIST_N_SP = 75
MNIST_COMPACTNESS = 0.25
MNIST_QUERY_SURPLUS = 20  # the recipe starts SLIC at n_sp + 20 segments for MNIST
CIFAR10_N_SP = 150
CIFAR10_COMPACTNESS = 10.0
CIFAR10_QUERY_SURPLUS = 50  # ... and at n_sp + 50 for CIFAR-10
RECIPE_SEED = 111  # the recipe's default --seed
SLIC_MIN_SIZE_FACTOR = 0.5  # skimage defaults, then and now
SLIC_MAX_SIZE_FACTOR = 3.0


@dataclass(frozen=True)
class SlicRecipe:
    """SLIC settings of one published superpixel set (``recipe`` of :func:`build_superpixels`).

    Attributes
    ----------
    n_sp : int
        At most this many superpixels per image.
    compactness : float
        SLIC compactness.
    query_surplus : int
        SLIC is first asked for ``n_sp + query_surplus`` segments.
    """

    n_sp: int
    compactness: float
    query_surplus: int

    def kwargs(self) -> dict:
        """``{'n_sp', 'compactness', 'query_surplus'}`` for :func:`extract_superpixels`."""
        return {"n_sp": self.n_sp, "compactness": self.compactness, "query_surplus": self.query_surplus}

    def describe(self) -> str:
        """One line for build notes and logs."""
        return (f"SLIC n_sp={self.n_sp} compactness={self.compactness} query n_sp+{self.query_surplus} "
                "decreasing, legacy skimage size thresholds")


@dataclass(frozen=True)
class RawImages:
    """The raw images and labels of a dataset's two official splits (what a superpixel build reads).

    Attributes
    ----------
    train_images : np.ndarray
        ``(n_train, H, W)`` (grey: MNIST 28x28) or ``(n_train, H, W, 3)``
        (RGB: CIFAR-10 32x32) uint8, 0..255.
    train_labels : np.ndarray
        ``(n_train,)`` int64 classes.
    test_images : np.ndarray
        ``(n_test, ...)`` uint8, as ``train_images``.
    test_labels : np.ndarray
        ``(n_test,)`` int64.
    source : str
        Where the images came from (for logs and provenance notes).
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    source: str

    def split(self, name: str) -> Tuple[np.ndarray, np.ndarray]:
        """Return ``(images, labels)`` of split ``'train'`` or ``'test'``."""
        if name == "train":
            return self.train_images, self.train_labels
        if name == "test":
            return self.test_images, self.test_labels
        raise DataError(f"unknown image split {name!r}; use 'train' or 'test'")


MNIST_RECIPE = SlicRecipe(n_sp=MNIST_N_SP, compactness=MNIST_COMPACTNESS, query_surplus=MNIST_QUERY_SURPLUS)
CIFAR10_RECIPE = SlicRecipe(n_sp=CIFAR10_N_SP, compactness=CIFAR10_COMPACTNESS, query_surplus=CIFAR10_QUERY_SURPLUS)


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


def _legacy_colour_slic(img: np.ndarray, n_segments: int, compactness: float, **kwargs) -> np.ndarray:
    """SLIC of an RGB image in [0, 1] as 2019 scikit-image ran it: CIE-Lab, no min/max rescaling.

    Today's ``slic`` rescales its input to [0, 1] by the min and max over all
    channels before the Lab conversion; the old one converted the image as
    given. Converting here and passing the Lab image with ``convert2lab=False``
    leaves only the rescaling of the Lab values, a shift (which no distance
    sees) and a division by their range ``r``; SLIC's colour distances scale
    with ``1 / compactness``, so ``compactness / r`` undoes the division.

    Parameters
    ----------
    img : np.ndarray
        ``(H, W, 3)`` RGB values in [0, 1].
    n_segments, compactness : int, float
        As for ``slic``.
    **kwargs
        Other ``slic`` arguments.

    Returns
    -------
    np.ndarray
        ``(H, W)`` int segment labels.
    """
    lab = rgb2lab(img.astype(np.float64))
    span = float(lab.max() - lab.min())
    return slic(lab, n_segments=n_segments, compactness=compactness / span if span > 0 else compactness,
                channel_axis=-1, convert2lab=False, **kwargs)


def _slic_segments(img: np.ndarray, n_query: int, compactness: float, legacy_slic: bool) -> np.ndarray:
    """One SLIC run on a grey ``(H, W)`` or RGB ``(H, W, 3)`` image in [0, 1] -> ``(H, W)`` labels from 0."""
    min_factor, max_factor = (
        legacy_size_factors(img.shape[:2], n_query) if legacy_slic else (SLIC_MIN_SIZE_FACTOR, SLIC_MAX_SIZE_FACTOR)
    )
    options = {"start_label": 0, "min_size_factor": min_factor, "max_size_factor": max_factor}
    if img.ndim == 2:
        return slic(img.astype(np.float64) if legacy_slic else img, n_segments=n_query, compactness=compactness,
                    channel_axis=None, **options)
    if legacy_slic:
        return _legacy_colour_slic(img, n_query, compactness, **options)
    return slic(img, n_segments=n_query, compactness=compactness, channel_axis=-1, **options)


def extract_superpixels(
    image: np.ndarray,
    n_sp: int = MNIST_N_SP,
    compactness: float = MNIST_COMPACTNESS,
    rng: Optional[np.random.Generator] = None,
    shuffle: bool = True,
    legacy_slic: bool = True,
    query_surplus: int = MNIST_QUERY_SURPLUS,
) -> SuperpixelRecord:
    """SLIC superpixels of one grey or RGB uint8 image, per the mnist_75sp / cifar10_150sp recipe.

    Parameters
    ----------
    image : np.ndarray
        ``(H, W)`` (grey, MNIST) or ``(H, W, 3)`` (RGB, CIFAR-10) uint8 (0..255).
    n_sp : int
        Upper bound on the number of superpixels (75 for MNIST, 150 for CIFAR-10).
    compactness : float
        SLIC compactness (0.25 for MNIST, 10 for CIFAR-10).
    rng : np.random.Generator, optional
        Source of the node permutation; a fresh unseeded one if ``None``.
    shuffle : bool
        Permute the node order as the recipe does (default) or keep SLIC
        label order.
    legacy_slic : bool
        Run SLIC as 2019 scikit-image did (float64 image, connectivity
        thresholds from the requested segment count, see
        :func:`legacy_size_factors`; colour images without today's min/max
        rescaling, see :func:`_legacy_colour_slic`); ``False`` uses today's
        defaults.
    query_surplus : int
        SLIC is first asked for ``n_sp + query_surplus`` segments (20 for
        MNIST, 50 for CIFAR-10).

    Returns
    -------
    intensity : np.ndarray
        ``(n, C)`` float32 mean value of each channel per superpixel, in
        [0, 1] (C = 1 grey, 3 RGB).
    coord : np.ndarray
        ``(n, 2)`` float32 centre of mass ``(row, col)`` in pixel units.
    order : np.ndarray
        ``(n,)`` int32 SLIC label of each node, ``1 <= n <= n_sp``.
    """
    image = np.asarray(image)
    colour = image.ndim == 3 and image.shape[2] == 3
    if not (image.ndim == 2 or colour) or image.dtype != np.uint8:
        raise DataError(
            f"superpixel input must be a 2-d or (H, W, 3) uint8 image, got {image.dtype} {image.shape}; "
            "pass raw MNIST or CIFAR-10 pixels"
        )
    img = (image / 255.0).astype(np.float32)

    n_query = n_sp + query_surplus
    while True:
        if n_query < 1:
            raise DataError(f"SLIC never gave <= {n_sp} segments for an image; raise n_sp")
        segments = _slic_segments(img, n_query, compactness, legacy_slic)
        labels = np.unique(segments)
        n_query -= 1
        if len(labels) <= n_sp:
            break

    if shuffle:
        perm = (rng if rng is not None else np.random.default_rng()).permutation(len(labels))
    else:
        perm = np.arange(len(labels))
    order = labels[perm].astype(np.int32)
    channels = img[..., None] if not colour else img
    intensity = np.stack(
        [np.asarray(ndimage.mean(channels[..., c], labels=segments, index=order)) for c in range(channels.shape[-1])],
        axis=1,
    ).astype(np.float32).reshape(-1, channels.shape[-1])
    coord = np.asarray(
        ndimage.center_of_mass(np.ones(img.shape[:2]), labels=segments, index=order), dtype=np.float32
    ).reshape(-1, 2)
    return intensity, coord, order


def _extract_chunk(task) -> List[SuperpixelRecord]:
    """Worker: superpixels of ``images`` numbered from ``start``, one seeded generator each."""
    start, images, seed, n_sp, compactness, legacy_slic, query_surplus = task
    return [
        extract_superpixels(
            img, n_sp, compactness, rng=np.random.default_rng([seed, start + i]), legacy_slic=legacy_slic,
            query_surplus=query_surplus,
        )
        for i, img in enumerate(images)
    ]


def build_superpixels(
    images: np.ndarray,
    seed: int = RECIPE_SEED,
    workers: Optional[int] = None,
    progress: bool = True,
    desc: str = "SLIC superpixels",
    recipe: SlicRecipe = MNIST_RECIPE,
    chunk_size: int = 64,
    legacy_slic: bool = True,
) -> List[SuperpixelRecord]:
    """Superpixels of many images, in parallel over processes.

    Parameters
    ----------
    images : np.ndarray
        ``(n, H, W)`` (grey) or ``(n, H, W, 3)`` (RGB) uint8.
    seed : int
        Node permutation of image ``i`` uses ``np.random.default_rng([seed, i])``,
        so the result does not depend on ``workers``.
    workers : int, optional
        Processes; defaults to the run's threads (``--threads``, see
        :func:`geaet_dgl.threads.current_threads`). ``1`` runs in-process.
    progress : bool
        Show a tqdm bar.
    desc : str
        Progress bar label.
    recipe : SlicRecipe
        SLIC settings (``n_sp``, ``compactness``, ``query_surplus``): :data:`MNIST_RECIPE`
        (default) or :data:`CIFAR10_RECIPE`.
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
    if not (images.ndim == 3 or (images.ndim == 4 and images.shape[3] == 3)):
        raise DataError(
            f"expected a stack of images (n, H, W) or (n, H, W, 3), got shape {images.shape}; "
            "pass MNIST or CIFAR-10 images"
        )
    workers = max(1, int(workers or current_threads()))
    tasks = [
        (start, images[start : start + chunk_size], seed, recipe.n_sp, recipe.compactness, legacy_slic,
         recipe.query_surplus)
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
    """Read a ``mnist_75sp_<split>.pkl`` / ``cifar10_150sp_<split>.pkl`` (published or built here).

    Returns
    -------
    labels : np.ndarray
        ``(n,)`` int32.
    sp_data : list
        ``n`` records; ``sp_data[i][:2]`` is ``(intensity (n_i, C), coord (n_i, 2))``.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            labels, sp_data = pickle.load(handle, encoding="latin1")
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise DataError(f"cannot read superpixel pickle {path} ({exc}); delete it to rebuild") from exc
    return np.asarray(labels), list(sp_data)
