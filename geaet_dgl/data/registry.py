"""``load_dataset(name, ...)``: one entry point for every dataset the package knows."""

import os
from typing import Callable, Dict, Optional, Union

from .dataset import DatasetSplits
from .errors import DataError
from .mnist import load_mnist
from .synthetic import synthetic_splits

PathLike = Union[str, os.PathLike]


def _mnist(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    if data_dir is None:
        raise DataError(
            "dataset 'mnist' needs data_dir (where its superpixel files are or will be built); pass data_dir"
        )
    return load_mnist(data_dir, **kwargs)


SYNTHETIC_DEFAULT_SIZES = {"train": 256, "val": 64, "test": 64}
_IGNORED_BY_SYNTHETIC = ("progress", "mnist_images", "workers", "num_val")


def _synthetic(data_dir: Optional[PathLike], **kwargs) -> DatasetSplits:
    """Synthetic splits; accepts the MNIST keyword names so callers can switch datasets freely.

    ``limit_train``/``limit_val``/``limit_test`` set the split sizes (defaults
    256/64/64); MNIST-only options (``progress``, ``mnist_images``, ...) are
    ignored; ``data_dir`` is not used.
    """
    for key in _IGNORED_BY_SYNTHETIC:
        kwargs.pop(key, None)
    sizes = {split: kwargs.pop(f"limit_{split}", None) for split in SYNTHETIC_DEFAULT_SIZES}
    sizes = {split: SYNTHETIC_DEFAULT_SIZES[split] if n is None else n for split, n in sizes.items()}
    return synthetic_splits(num_train=sizes["train"], num_val=sizes["val"], num_test=sizes["test"], **kwargs)


LOADERS: Dict[str, Callable[..., DatasetSplits]] = {"mnist": _mnist, "synthetic": _synthetic}


def load_dataset(name: str, data_dir: Optional[PathLike] = None, **kwargs) -> DatasetSplits:
    """Load dataset ``name`` (case-insensitive).

    Parameters
    ----------
    name : str
        ``'mnist'`` (:func:`.mnist.load_mnist`) or ``'synthetic'``
        (:func:`.synthetic.synthetic_splits`; ``data_dir`` ignored, the
        ``limit_*`` keywords give the split sizes).
    data_dir : path-like, optional
    **kwargs
        Passed to the loader.

    Returns
    -------
    DatasetSplits
    """
    key = str(name).lower()
    if key not in LOADERS:
        raise DataError(f"unknown dataset {name!r}; choose one of {', '.join(sorted(LOADERS))}")
    return LOADERS[key](data_dir, **kwargs)
