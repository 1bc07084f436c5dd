"""Read and write IDX files (the format of the original MNIST distribution).

An IDX file is a 4-byte magic number ``00 00 <dtype code> <ndim>``, then
``ndim`` big-endian uint32 dimension sizes, then the array in C order,
big-endian. Files may be gzip-compressed (``.gz``).
"""

import gzip
import os
import struct
from pathlib import Path
from typing import Dict, Optional, Union

import numpy as np

from ...atomic import atomic_write
from ..errors import DataError

PathLike = Union[str, os.PathLike]

_CODE_TO_DTYPE = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_DTYPE_TO_CODE = {dtype.newbyteorder("="): code for code, dtype in _CODE_TO_DTYPE.items()}

#: The four MNIST files, by role, as the original distribution names them.
MNIST_IDX_STEMS: Dict[str, str] = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}


def read_idx(path: PathLike) -> np.ndarray:
    """Read one IDX file (optionally gzipped) into a native-endian array.

    Parameters
    ----------
    path : path-like
        File to read; a ``.gz`` suffix means gzip.

    Returns
    -------
    np.ndarray
        Shape given by the header, e.g. ``(60000, 28, 28)`` uint8 for MNIST
        images and ``(60000,)`` uint8 for labels.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read IDX file {path} ({exc}); re-download it") from exc
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _CODE_TO_DTYPE:
        raise DataError(f"{path} is not an IDX file (bad magic number); pass the original MNIST IDX files")
    dtype = _CODE_TO_DTYPE[raw[2]]
    ndim = raw[3]
    header_len = 4 + 4 * ndim
    if len(raw) < header_len:
        raise DataError(f"IDX file {path} is truncated inside its header; re-download it")
    shape = struct.unpack(f">{ndim}I", raw[4:header_len])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header_len != expected:
        raise DataError(
            f"IDX file {path} holds {len(raw) - header_len} data bytes but its header "
            f"{tuple(shape)} needs {expected}; re-download it"
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header_len).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def write_idx(path: PathLike, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file, gzipped if ``path`` ends in ``.gz``.

    Parameters
    ----------
    path : path-like
        Destination (written atomically).
    array : np.ndarray
        Any shape; dtype one of uint8, int8, int16, int32, float32, float64.
    """
    array = np.asarray(array)
    native = array.dtype.newbyteorder("=")
    if native not in _DTYPE_TO_CODE:
        raise DataError(f"IDX cannot store dtype {array.dtype}; cast to uint8, int32 or float32 first")
    header = bytes([0, 0, _DTYPE_TO_CODE[native], array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + np.ascontiguousarray(array).astype(native.newbyteorder(">")).tobytes()
    path = Path(path)
    with atomic_write(path) as handle:
        if path.suffix == ".gz":
            with gzip.GzipFile(fileobj=handle, mode="wb", mtime=0) as gz:
                gz.write(payload)
        else:
            handle.write(payload)


def find_idx_file(folder: PathLike, stem: str) -> Optional[Path]:
    """Locate ``stem`` in ``folder`` under its usual spellings.

    Parameters
    ----------
    folder : path-like
        Folder to look in.
    stem : str
        E.g. ``"train-images-idx3-ubyte"``.

    Returns
    -------
    Path or None
        The first of ``stem``, ``stem.gz`` and the dotted variant
        (``train-images.idx3-ubyte``) that exists, else ``None``.
    """
    folder = Path(folder)
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", dotted, dotted + ".gz"):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None
