"""What a dataset is loaded with: :class:`LoadOptions`, the one argument every loader takes.

Every loader is ``load_X(options)`` or, for a family of datasets,
``load_X(name, options)``; :func:`~geaet_dgl.data.registry.load_dataset` calls
them all the same way. A loader reads the fields it needs and ignores the rest,
so one object serves every dataset (DGL's datasets share one signature the same
way). The loaders return their graphs without encodings: the positional ones asked for are
applied after the loader by one path (:func:`~.encodings.apply.encode_splits`, where the loader's
``encoding_plan`` caches them), then the structural ones
(:func:`~.encodings.se_cache.attach_structural`), both by
:func:`~geaet_dgl.data.registry.load_with`.

Example
-------
>>> options = LoadOptions(data_dir="data", pe_k=8, limit_train=100, progress=False)
>>> options.limits
(100, None, None)
>>> options.encodings(default_k=0).k
8
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .encodings.apply import EncodingRequest
from .encodings.se_cache import StructuralSpec

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class FileSplit:
    """How a run splits a graph file into train / val / test, and what the run recorded of the file.

    ``split_file``, ``split`` (fractions) and ``split_seed`` cut a new split
    (:func:`~.own_files.file_splits.split_indices`). ``identity`` and ``indices`` are a run's record of
    the file (:func:`~.identity.file_identity`) and of its split
    (``{'train': [...], 'val': [...], 'test': [...]}``): the split is then
    ``indices``, and a file whose identity differs is refused (DataError)
    unless ``allow_changed``. Without ``indices``, ``legacy_split`` cuts the
    random split as runs that predate the record did. The fields are the
    :class:`LoadOptions` fields of the same names (:attr:`LoadOptions.file_split`).
    """

    split_file: Optional[PathLike] = None
    split: Optional[Sequence[float]] = None
    split_seed: int = 0
    identity: Optional[Dict[str, Any]] = None
    indices: Optional[Dict[str, List[int]]] = None
    allow_changed: bool = False
    legacy_split: bool = False


@dataclass(frozen=True)
class LoadOptions:
    """The options of one dataset load; every field has a default, and ``None`` means "the dataset's own".

    Shared by every loader
    ----------------------
    data_dir : path-like, optional
        The dataset's folder (DGL's ``raw_dir``); unused by generated datasets and graph files.
    limit_train, limit_val, limit_test : int, optional
        Keep the first ``n`` graphs (nodes, for one graph with node masks) of a split.
    pe_k : int, optional
        Laplacian eigenpairs per graph (``ndata['lap_pe']`` / ``['lap_eigval']``); ``None``: the dataset's default.
    rwse_k : int, optional
        Random-walk steps of ``ndata['rwse']``; ``None``: no RWSE.
    laplacian_norm : {'sym', 'none'}, optional
        The Laplacian of the eigenpairs; ``None``: the dataset's (:data:`~.registry.LAPLACIAN_NORM`).
    structural : StructuralSpec
        HKdiagSE, ElstaticSE, Graphormer's types and degrees, added after the loader.
    progress : bool
        Progress bars.
    workers : int, optional
        Processes for a build (superpixels); ``None``: all cores.
    seed : int, optional
        Seed of a build or generator; ``None``: the dataset's.

    Read by some loaders
    --------------------
    mnist_images, cifar_images, num_val
        MNIST / CIFAR10: raw images for a build; validation graphs taken from the training pickle.
    generate, depth
        PATTERN / CLUSTER / PCQM-Contact: generate missing files; TreeNeighbourMatch's radius.
    statistics, standardize, check_md5
        VOC / COCO: the split whose statistics standardise the features, or none; Peptides: check DGL's md5.
    split_index, split_seed
        Named node sets: which public split, or the seed of a generated one (and of a graph file's split).
    data_file, task, target_ntype, split_file, split, identity, indices, allow_changed, legacy_split
        The user's own graph file (:attr:`file_split` groups the split fields).
    """

    data_dir: Optional[PathLike] = None
    limit_train: Optional[int] = None
    limit_val: Optional[int] = None
    limit_test: Optional[int] = None
    pe_k: Optional[int] = None
    rwse_k: Optional[int] = None
    laplacian_norm: Optional[str] = None
    structural: StructuralSpec = field(default_factory=StructuralSpec)
    progress: bool = True
    workers: Optional[int] = None
    seed: Optional[int] = None
    mnist_images: Optional[PathLike] = None
    cifar_images: Optional[PathLike] = None
    num_val: Optional[int] = None
    generate: bool = False
    depth: Optional[int] = None
    statistics: Optional[str] = None
    standardize: bool = True
    check_md5: bool = True
    split_index: int = 0
    split_seed: int = 0
    data_file: Optional[PathLike] = None
    task: Optional[str] = None
    target_ntype: Optional[str] = None
    split_file: Optional[PathLike] = None
    split: Optional[Sequence[float]] = None
    identity: Optional[Dict[str, Any]] = None
    indices: Optional[Dict[str, List[int]]] = None
    allow_changed: bool = False
    legacy_split: bool = False

    @property
    def limits(self) -> Tuple[Optional[int], Optional[int], Optional[int]]:
        """``(limit_train, limit_val, limit_test)``."""
        return self.limit_train, self.limit_val, self.limit_test

    @property
    def limit_of(self) -> Dict[str, Optional[int]]:
        """``{'train': limit_train, 'val': limit_val, 'test': limit_test}``."""
        return dict(zip(("train", "val", "test"), self.limits))

    @property
    def file_split(self) -> FileSplit:
        """The graph-file split fields as one :class:`FileSplit`."""
        return FileSplit(**{item.name: getattr(self, item.name) for item in fields(FileSplit)})

    def encodings(self, default_k: Optional[int] = 0, default_norm: str = "sym") -> EncodingRequest:
        """What :func:`~.encodings.apply.encode_splits` computes: ``pe_k`` (else ``default_k``; ``None`` counts
        as 0), ``laplacian_norm`` (else ``default_norm``), ``rwse_k``, ``progress``."""
        k = self.pe_k if self.pe_k is not None else default_k
        norm = self.laplacian_norm if self.laplacian_norm is not None else default_norm
        return EncodingRequest(k=k or 0, norm=norm, rwse_k=self.rwse_k, progress=self.progress)

    def or_default(self, name: str, default: Any) -> Any:
        """Field ``name``, or ``default`` where it is ``None``."""
        value = getattr(self, name)
        return default if value is None else value

    def with_(self, **changes: Any) -> "LoadOptions":
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return replace(self, **changes)
