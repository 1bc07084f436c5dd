"""Molecular graph datasets outside LRGB: ZINC.

:mod:`.zinc`
    ZINC 12k (Benchmarking GNNs, graph regression): DGL's ``ZINCDataset`` reads
    ``ZincDGL_{train,valid,test}.bin`` (DGL's ``ZINC12k.zip``) from
    ``data_dir/zinc_<hash>/``; atom and bond types as integer features. Nothing downloads:
    the error for missing files names the folder to unpack the archive into.

ZINC sits here rather than with the other Benchmarking-GNNs sets: unlike MNIST
/ CIFAR10 (built from images) and PATTERN / CLUSTER (generated) its graphs are
molecules read as published, and its encoders are the integer-vocabulary
``embedding`` ones the LRGB molecules also use.
"""

from .zinc import load_zinc

__all__ = ["load_zinc"]
