"""The registry's table of each dataset's default Laplacian agrees with the loaders' own defaults.

``predict`` computes positional encodings for new graphs with the table's normalisation, so a loader
whose default changed without the table would give new graphs encodings unlike the training data's.
Each loader module keeps its default in ``DEFAULT_LAPLACIAN_NORM`` (what it passes to
``LoadOptions.encodings``); the synthetic generator in its signature.
"""
import inspect

import pytest

from geaet_dgl.data import LoadOptions, registry
from geaet_dgl.data.generated import sbm
from geaet_dgl.data.generated.synthetic import synthetic_mnist_like
from geaet_dgl.data.lrgb import pcqm_contact, peptides, voc_coco
from geaet_dgl.data.malnet import tiny
from geaet_dgl.data.molecules import zinc
from geaet_dgl.data.nodes import node_graph, node_sets, ogbn
from geaet_dgl.data.nodes.node_sets import NODE_SETS
from geaet_dgl.data.ogbg import graphprop, pcqm4mv2
from geaet_dgl.data.own_files import graph_files
from geaet_dgl.data.own_files.graph_files import GRAPH_FILE
from geaet_dgl.data.superpixels import loader as superpixels

MODULE_OF = {"mnist": superpixels, "cifar10": superpixels, "pattern": sbm, "cluster": sbm, "zinc": zinc,
             "voc": voc_coco, "coco": voc_coco, "peptides-func": peptides, "peptides-struct": peptides,
             "pcqm-contact": pcqm_contact, GRAPH_FILE: graph_files, "ogbn-arxiv": ogbn, "ogbn-products": ogbn,
             "ogbg-molhiv": graphprop, "ogbg-molpcba": graphprop, "ogbg-ppa": graphprop, "ogbg-code2": graphprop,
             "pcqm4mv2": pcqm4mv2, "pcqm4mv2-subset": pcqm4mv2, "pcqm4mv2-inference": pcqm4mv2, "malnet-tiny": tiny,
             **{name: node_sets for name in NODE_SETS}}


@pytest.mark.parametrize("name", sorted(MODULE_OF))
def test_table_matches_loader_default(name):
    assert registry.laplacian_norm_of(name) == MODULE_OF[name].DEFAULT_LAPLACIAN_NORM


def test_synthetic_and_one_graph_files_match_the_table():
    assert registry.laplacian_norm_of("synthetic") == \
        inspect.signature(synthetic_mnist_like).parameters["laplacian_norm"].default
    assert node_graph.DEFAULT_LAPLACIAN_NORM == registry.laplacian_norm_of(GRAPH_FILE)  # a file of one graph


def test_a_loader_reads_its_default_only_where_the_options_name_none():
    options = LoadOptions(pe_k=3)
    assert options.encodings(default_norm=peptides.DEFAULT_LAPLACIAN_NORM).norm == "none"
    assert options.with_(laplacian_norm="sym").encodings(default_norm="none").norm == "sym"


def test_every_pe_dataset_is_covered():
    with_pe = {name for name in registry.LOADERS if name not in ("tree", "synthetic")}  # no Laplacian PE / generator
    assert with_pe <= set(MODULE_OF)
