"""The registry's table of each dataset's default Laplacian agrees with the loaders' own defaults.

``predict`` computes positional encodings for new graphs with the table's normalisation, so a loader
whose default changed without the table would give new graphs encodings unlike the training data's.
"""
import inspect

import pytest

from geaet_dgl.data import registry
from geaet_dgl.data.generated.sbm import load_sbm
from geaet_dgl.data.generated.synthetic import synthetic_mnist_like
from geaet_dgl.data.own_files.graph_files import GRAPH_FILE, load_graph_file
from geaet_dgl.data.lrgb.pcqm_contact import load_pcqm_contact
from geaet_dgl.data.lrgb.peptides import load_peptides
from geaet_dgl.data.lrgb.voc_coco import load_lrgb_superpixels
from geaet_dgl.data.molecules.zinc import load_zinc
from geaet_dgl.data.malnet.tiny import load_malnet_tiny
from geaet_dgl.data.ogbg.code2 import load_code2
from geaet_dgl.data.ogbg.graphprop import load_ogbg
from geaet_dgl.data.ogbg.pcqm4mv2 import load_pcqm4mv2
from geaet_dgl.data.nodes.node_sets import NODE_SETS, load_node_set
from geaet_dgl.data.nodes.ogbn import load_ogbn
from geaet_dgl.data.superpixels.cifar10 import load_cifar10
from geaet_dgl.data.superpixels.mnist import load_mnist

LOADER_OF = {"mnist": load_mnist, "cifar10": load_cifar10, "pattern": load_sbm, "cluster": load_sbm,
             "zinc": load_zinc, "voc": load_lrgb_superpixels, "coco": load_lrgb_superpixels,
             "peptides-func": load_peptides, "peptides-struct": load_peptides, "pcqm-contact": load_pcqm_contact,
             "synthetic": synthetic_mnist_like, GRAPH_FILE: load_graph_file,
             "ogbn-arxiv": load_ogbn, "ogbn-products": load_ogbn, "ogbg-molhiv": load_ogbg, "ogbg-molpcba": load_ogbg,
             "ogbg-ppa": load_ogbg, "ogbg-code2": load_code2, "pcqm4mv2": load_pcqm4mv2,
             "pcqm4mv2-subset": load_pcqm4mv2, "pcqm4mv2-inference": load_pcqm4mv2, "malnet-tiny": load_malnet_tiny,
             **{name: load_node_set for name in NODE_SETS}}


@pytest.mark.parametrize("name", sorted(LOADER_OF))
def test_table_matches_loader_default(name):
    default = inspect.signature(LOADER_OF[name]).parameters["laplacian_norm"].default
    assert registry.laplacian_norm_of(name) == default


def test_every_pe_dataset_is_covered():
    with_pe = {name for name in registry.LOADERS if name != "tree"}  # TreeNeighbourMatch has no Laplacian PE
    assert with_pe <= set(LOADER_OF)
