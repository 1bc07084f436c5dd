"""What a dataset looks like without reading it: one :class:`DatasetSchema` row per dataset.

``train --config FILE --dry-run`` builds the model a configuration describes
from its dataset's row (input and edge feature widths, vocabularies, classes
or tasks, metric) and lists the files a real run would read; a loader that is
not written yet only needs its row for the dry run. A loader adds its own row
with :func:`register_schema` (or an entry in :data:`DATASET_SCHEMAS`), next to
its ``LOADERS`` entry in :mod:`.registry`.

Widths are those the stored files give our loaders (``ndata['feat']`` and
``edata['feat']``, columns of integer types for the categorical encoders).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from .errors import DataError

#: ``DatasetSchema.task`` values.
SCHEMA_TASKS = ("graph", "node", "transductive-node", "link")


@dataclass(frozen=True)
class DatasetSchema:
    """The shapes of one dataset, known without reading it.

    name : our dataset name (``load_dataset``'s).
    task : ``graph`` (one label per graph), ``node`` (inductive: labels on the nodes of many graphs),
        ``transductive-node`` (one graph, train/val/test node masks) or ``link`` (pairs of nodes).
    task_type : ``classification``, ``classification_binary``, ``classification_multilabel``,
        ``regression`` or ``subtoken_prediction`` (graphgym's names).
    node_in_feats, edge_in_feats : columns of ``ndata['feat']`` / ``edata['feat']`` (0: the graphs carry none).
    out_feats : classes (one logit for a binary task), tasks, or regression targets.
    metric : our metric name (``TrainConfig.metric``).
    files : the files a run reads, relative to ``--data-dir`` (``{split}``-free paths; a folder ends in ``/``).
    node_vocab_sizes, edge_vocab_sizes : categorical columns' vocabularies (empty: float features).
    splits : how train/val/test are drawn (``standard``: the dataset's own).
    num_splits : public splits to choose from with ``--split-index`` (1: one).
    """

    name: str
    task: str
    task_type: str
    node_in_feats: int
    edge_in_feats: int
    out_feats: int
    metric: str
    files: Tuple[str, ...] = ()
    node_vocab_sizes: Tuple[int, ...] = ()
    edge_vocab_sizes: Tuple[int, ...] = ()
    splits: str = "standard"
    num_splits: int = 1
    note: str = ""
    extra: Dict[str, object] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self):
        if self.task not in SCHEMA_TASKS:
            raise ValueError(f"schema {self.name!r}: task={self.task!r} is not one of {', '.join(SCHEMA_TASKS)}")


#: OGB's AtomEncoder / BondEncoder vocabularies (``ogb.utils.features.get_atom_feature_dims`` /
#: ``get_bond_feature_dims``): 9 categorical atom columns, 3 bond columns.
OGB_ATOM_VOCAB = (119, 5, 12, 12, 10, 6, 6, 2, 2)
OGB_BOND_VOCAB = (5, 6, 2)
#: ogbg-code2's AST node columns (type, attribute, depth capped at 20: GraphGPS's ``ASTNode``) and edge
#: columns (AST or next-token edge, direction: ``augment_edge``); its sequence head's vocabulary
#: (5,000 subtokens + ``__UNK__`` + ``__EOS__``) and length.
CODE2_NODE_VOCAB = (98, 10030, 21)
CODE2_EDGE_VOCAB = (2, 2)
CODE2_VOCAB, CODE2_SEQ_LEN = 5002, 5


def _ogbg(name: str, task_type: str, out_feats: int, metric: str, **kwargs) -> DatasetSchema:
    folder = name.replace("-", "_")
    return DatasetSchema(name, "graph", task_type, kwargs.pop("node_in_feats", 9), kwargs.pop("edge_in_feats", 3),
                         out_feats, metric, files=(f"{folder}/",), **kwargs)


def _node_set(name: str, feats: int, classes: int, files: Tuple[str, ...], splits: str, num_splits: int,
              note: str) -> DatasetSchema:
    return DatasetSchema(name, "transductive-node", "classification", feats, 0, classes, "accuracy", files=files,
                         splits=splits, num_splits=num_splits, note=note)


_GEOM_GCN = "geom-gcn's 10 splits (60/20/20 per class)"
_PLANETOID = "Planetoid public split (20 labels a class, 500 val, 1,000 test)"

DATASET_SCHEMAS: Dict[str, DatasetSchema] = {row.name: row for row in (
    DatasetSchema("mnist", "graph", "classification", 3, 1, 10, "accuracy",
                  files=("superpixels/mnist_75sp_train.pkl", "superpixels/mnist_75sp_test.pkl")),
    DatasetSchema("cifar10", "graph", "classification", 5, 1, 10, "accuracy",
                  files=("superpixels/cifar10_150sp_train.pkl", "superpixels/cifar10_150sp_test.pkl")),
    DatasetSchema("pattern", "node", "classification", 3, 1, 2, "balanced_accuracy", files=("SBM_PATTERN/",)),
    DatasetSchema("cluster", "node", "classification", 7, 1, 6, "balanced_accuracy", files=("SBM_CLUSTER/",)),
    DatasetSchema("zinc", "graph", "regression", 1, 1, 1, "mae", files=("ZINC12k.zip",),
                  node_vocab_sizes=(28,), edge_vocab_sizes=(4,)),
    DatasetSchema("voc", "node", "classification", 14, 2, 21, "f1_macro",
                  files=("voc_superpixels_edge_wt_region_boundary/",)),
    DatasetSchema("coco", "node", "classification", 14, 2, 81, "f1_macro",
                  files=("coco_superpixels_edge_wt_region_boundary/",)),
    DatasetSchema("peptides-func", "graph", "classification_multilabel", 9, 3, 10, "average_precision",
                  files=("peptide_multi_class_dataset.csv.gz", "splits_random_stratified_peptide.pickle"),
                  node_vocab_sizes=OGB_ATOM_VOCAB, edge_vocab_sizes=OGB_BOND_VOCAB),
    DatasetSchema("peptides-struct", "graph", "regression", 9, 3, 11, "mae",
                  files=("peptide_structure_dataset.csv.gz", "splits_random_stratified_peptide_structure.pickle"),
                  node_vocab_sizes=OGB_ATOM_VOCAB, edge_vocab_sizes=OGB_BOND_VOCAB),
    DatasetSchema("pcqm-contact", "link", "classification", 9, 3, 1, "mrr",
                  files=("pcqm4m-contact.tsv.gz", "530k_shuffle_split_dict.pt"),
                  node_vocab_sizes=OGB_ATOM_VOCAB, edge_vocab_sizes=OGB_BOND_VOCAB),
    # OGB graph property prediction (OGB's DglGraphPropPredDataset, in its own folder layout)
    _ogbg("ogbg-molhiv", "classification", 1, "roc_auc", node_vocab_sizes=OGB_ATOM_VOCAB,
          edge_vocab_sizes=OGB_BOND_VOCAB, note="41,127 molecules, scaffold split"),
    _ogbg("ogbg-molpcba", "classification_multilabel", 128, "average_precision", node_vocab_sizes=OGB_ATOM_VOCAB,
          edge_vocab_sizes=OGB_BOND_VOCAB, note="437,929 molecules, 128 tasks with missing labels"),
    _ogbg("ogbg-ppa", "classification", 37, "accuracy", node_in_feats=1, edge_in_feats=7,
          note="158,100 protein association graphs; nodes carry no features (one learned vector)"),
    _ogbg("ogbg-code2", "subtoken_prediction", CODE2_VOCAB, "f1_subtoken", node_in_feats=3, edge_in_feats=2,
          node_vocab_sizes=CODE2_NODE_VOCAB, edge_vocab_sizes=CODE2_EDGE_VOCAB,
          note=f"452,741 ASTs; {CODE2_SEQ_LEN} subtokens of {CODE2_VOCAB:,} predicted per method name",
          extra={"seq_len": CODE2_SEQ_LEN}),
    # PCQM4Mv2 (OGB-LSC) through OGB's LSC loader from SMILES: the full set, GraphGPS's subset, and the
    # test-dev/challenge inference split
    *(DatasetSchema(name, "graph", "regression", 9, 3, 1, "mae", files=("pcqm4m-v2/raw/data.csv.gz",
                                                                        "pcqm4m-v2/split_dict.pt"),
                    node_vocab_sizes=OGB_ATOM_VOCAB, edge_vocab_sizes=OGB_BOND_VOCAB, note=note)
      for name, note in (("pcqm4mv2", "3,746,620 molecules; HOMO-LUMO gap (eV)"),
                         ("pcqm4mv2-subset", "GraphGPS's subset: 10% of train, the full valid split"),
                         ("pcqm4mv2-inference", "test-dev / test-challenge, no labels"))),
    DatasetSchema("malnet-tiny", "graph", "classification", 5, 0, 5, "accuracy",
                  files=("malnet-tiny/", "split_info_tiny/"),
                  note="5,000 function-call graphs, 5 classes; LocalDegreeProfile node features (5)"),
    # node sets of one graph (DGL's loaders; issue 27)
    _node_set("cora", 1433, 7, ("cora_v2/",), _PLANETOID, 1, "2,708 nodes"),
    _node_set("citeseer", 3703, 6, ("citeseer/",), _PLANETOID, 1, "3,327 nodes"),
    _node_set("pubmed", 500, 3, ("pubmed/",), _PLANETOID, 1, "19,717 nodes"),
    _node_set("cornell", 1703, 5, ("cornell/",), _GEOM_GCN, 10, "183 nodes"),
    _node_set("texas", 1703, 5, ("texas/",), _GEOM_GCN, 10, "183 nodes"),
    _node_set("wisconsin", 1703, 5, ("wisconsin/",), _GEOM_GCN, 10, "251 nodes"),
    _node_set("actor", 932, 5, ("actor/",), _GEOM_GCN, 10, "7,600 nodes"),
    _node_set("chameleon", 2325, 5, ("chameleon/",), _GEOM_GCN, 10, "2,277 nodes"),
    _node_set("squirrel", 2089, 5, ("squirrel/",), _GEOM_GCN, 10, "5,201 nodes"),
)}


def register_schema(schema: DatasetSchema, replace: bool = False) -> DatasetSchema:
    """Add ``schema`` to :data:`DATASET_SCHEMAS` (``replace=True`` overwrites a row of the same name)."""
    if schema.name in DATASET_SCHEMAS and not replace and DATASET_SCHEMAS[schema.name] != schema:
        raise ValueError(f"dataset schema {schema.name!r} is already registered; pass replace=True")
    DATASET_SCHEMAS[schema.name] = schema
    return schema


def schema_of(name: str) -> DatasetSchema:
    """The schema row of dataset ``name`` (case-insensitive)."""
    key = str(name).lower()
    if key not in DATASET_SCHEMAS:
        raise DataError(f"dataset {name!r} has no schema row (geaet_dgl.data.schema.DATASET_SCHEMAS); known: "
                        f"{', '.join(sorted(DATASET_SCHEMAS))}")
    return DATASET_SCHEMAS[key]


def find_schema(name: str) -> Optional[DatasetSchema]:
    """The schema row of ``name``, or None."""
    return DATASET_SCHEMAS.get(str(name).lower())
