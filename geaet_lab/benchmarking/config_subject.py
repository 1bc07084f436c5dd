"""What ``benchmark --against-pyg REF_DIR --config FILE.yaml`` compares: the model a reference (GEAET or
GraphGPS) YAML describes, ours and the reference's, on synthetic graphs shaped like its dataset.

The graphs come from :mod:`.inputs` (shaped like every dataset a file can name) and carry exactly the
encodings our model reads for this configuration (Laplacian PE with the file's normalisation, RWSE,
HKdiagSE, ElstaticSE, Graphormer's spatial types and degrees). Once the reference's model is built
(:meth:`ConfigSubject.reference_model`), the reference's batches carry what its own loader computes
instead (:mod:`~geaet_lab.interop.reference_loader`: its ``compute_posenc_stats``; its in-degree histogram
for PNA), so the comparison covers our encodings too.
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import dgl
import torch

from geaet_dgl.config import ModelConfig, TrainConfig
from geaet_dgl.data import GraphDataset
from geaet_dgl.data.encodings.pe_cache import attach_pe, compute_split_pe
from geaet_dgl.data.registry import laplacian_norm_of
from geaet_dgl.data.encodings.se_cache import attach_structural
from geaet_dgl.interop.reference_yaml import DATASETS, read_reference_config
from geaet_dgl.nn.self_attention import MAX_DENSE_NODES
from .inputs import (PLAIN_GENERATORS, SUPPORTED_PRESETS, UnsupportedPreset, batches_of, is_transductive,
                     plain_synthetic_graphs, synthetic_graphs)
from .shapes import distinct_graphs, repeat_graphs

#: our names of the reference's input-standardisation buffers (VOCNode/VOCEdge encoders)
_INPUT_STATISTICS = re.compile(r"^encoder\.(node|edge)_encoder\.(encoder1\.)?(node|edge)_x_(mean|std)$")
#: ndata fields of the encodings, recomputed for each configuration
_ENCODINGS = ("lap_pe", "lap_eigval", "rwse")
#: attention kinds that attend over a whole graph (at most MAX_DENSE_NODES nodes): a one-graph node set is
#: generated at that size for them (GraphGPS's actor, squirrel files), as ``train`` would need cluster batches
DENSE_ATTENTION = ("transformer", "biased_transformer")

log = logging.getLogger(__name__)


@dataclass
class ConfigSubject:
    """A reference YAML read into our configuration, and the widths the reference is built with."""

    path: str
    model: ModelConfig
    train: TrainConfig
    dataset: str
    laplacian_norm: str
    dim_in: int
    dim_out: int
    #: the reference's graphgym configuration its model was built with (set by :meth:`reference_model`)
    reference_cfg: object = None
    #: the input standardisation the reference's encoders hold as buffers (VOCNode/VOCEdge: ``{'x': (mean, std),
    #: 'edge_attr': (mean, std)}``), which our loader applies instead (set by :meth:`reference_model`)
    reference_input_statistics: Optional[dict] = None

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def graphs(self, num_graphs: int, seed: int = 0, max_nodes: Optional[int] = None) -> GraphDataset:
        """``num_graphs`` synthetic graphs shaped like the dataset, with the encodings the model reads (a one-graph
        node set: its one graph; ``max_nodes``: see :func:`.inputs.synthetic_graphs`)."""
        from geaet_dgl.data.run_splits import data_pe_sizes, structural_spec

        count = 1 if is_transductive(self.dataset) else distinct_graphs(self.dataset, num_graphs)
        if is_transductive(self.dataset) and self.model.attention in DENSE_ATTENTION:
            max_nodes = min(max_nodes or MAX_DENSE_NODES, MAX_DENSE_NODES)
            log.info("%s: attention=%s attends over the whole graph, at most %d nodes: the %s graph is generated "
                     "with %d nodes at its average degree", self.name, self.model.attention, MAX_DENSE_NODES,
                     self.dataset, max_nodes)
        generate = plain_synthetic_graphs if self.dataset in PLAIN_GENERATORS else synthetic_graphs
        data = generate(self.dataset, count, seed=seed, max_nodes=max_nodes)
        for g in data.graphs:
            for key in _ENCODINGS:
                g.ndata.pop(key, None)
        pe_k, rwse_k = data_pe_sizes(self.model)
        attach_pe(data.graphs, compute_split_pe(data.graphs, pe_k, self.laplacian_norm, rwse_k, progress=False))
        attach_structural(data.graphs, structural_spec(self.model))
        return repeat_graphs(data, num_graphs)

    def batches(self, batch_size: int, num_batches: int, seed: int = 0, max_nodes: Optional[int] = None
                ) -> List[Tuple[dgl.DGLGraph, torch.Tensor]]:
        """``num_batches`` batches of ``batch_size`` graphs (a one-graph node set: its whole graph each time)."""
        return batches_of(self.graphs(batch_size * num_batches, seed, max_nodes), batch_size, num_batches)

    def pyg_batch(self, graph: dgl.DGLGraph, labels: torch.Tensor, share_float32: bool = False,
                  float64: bool = False):
        """``graph`` as the reference's loader gives it (:func:`~geaet_lab.interop.pyg_export.to_pyg_batch`;
        ZINC's bond types as one (E,) column, as PyG's ZINC stores them), with the statistics of its own
        ``compute_posenc_stats`` once :meth:`reference_model` has run, and the features the reference's
        VOC encoders standardise themselves given back unstandardised (``x * std + mean``: they compute ours).

        The parity check's batch: ``share_float32``, ours for the float32 statistics the two sides compute by
        different routes (RWSE, HKdiagSE: :data:`~geaet_lab.interop.reference_loader.FLOAT32_STATISTICS`);
        ``float64``, unstandardised features left in float64 (float32 would round them)."""
        from ..interop.pyg_export import to_pyg_batch

        hook = None
        if self.reference_cfg is not None:
            from ..interop.reference_loader import FLOAT32_STATISTICS, KEPT_AS_OURS, with_reference_statistics

            cfg = self.reference_cfg
            featureless = cfg.dataset.edge_encoder_name == "DummyEdge"  # PyG's PATTERN/CLUSTER: no edge_attr
            no_node_features = cfg.dataset.node_encoder_name.startswith("PPANode")  # ogbg-ppa: its add_zeros
            keep = KEPT_AS_OURS + (FLOAT32_STATISTICS if share_float32 else ())

            def hook(items):
                for data in items if featureless else ():
                    del data.edge_attr
                for data in items if no_node_features else ():
                    data.x = torch.zeros(data.num_nodes, dtype=torch.long)
                return with_reference_statistics(items, cfg, keep)
        batch = to_pyg_batch(graph, labels, edge_types_as_vector=self.model.edge_encoder == "typedict",
                             items_hook=hook)
        for key, (mean, std) in (self.reference_input_statistics or {}).items():
            value = batch[key].double() * std.double() + mean.double()
            batch[key] = value if float64 else value.to(batch[key].dtype)
        return batch

    def float32_statistics(self) -> Tuple[str, ...]:
        """The ``pestat_*`` fields of :data:`~geaet_lab.interop.reference_loader.FLOAT32_STATISTICS` this
        file's model reads (RWSE as its PE or beside another, HKdiagSE)."""
        kinds = {self.model.pe, self.model.se}
        return tuple(field for field, kind in (("pestat_RWSE", "rwse"), ("pestat_HKdiagSE", "hkdiagse"))
                     if kind in kinds)

    def loss(self) -> Callable:
        from geaet_dgl.training.losses import get_loss

        return get_loss(self.train.loss)

    def reference_model(self, ref_dir: str, seed: int = 0, degree_graphs=()) -> torch.nn.Module:
        """The reference's model for the file, built as its loader leaves the configuration: for a PNA layer
        type without ``gt.pna_degrees``, the in-degree histogram of ``degree_graphs`` (DGL graphs standing for
        the training split) by its own ``compute_indegree_histogram``. Keeps the configuration it was built
        with (:attr:`reference_cfg`) for :meth:`pyg_batch`."""
        import importlib

        import yaml

        from ..interop.reference_loader import needs_degree_histogram, reference_degree_histogram
        from ..interop.reference_model import load_reference_from_config

        with open(self.path) as handle:
            tree = yaml.safe_load(handle)
        pna_degrees = None
        if needs_degree_histogram(tree):
            if not degree_graphs:
                raise ValueError(f"{self.name}: a PNA layer without gt.pna_degrees needs the training graphs' "
                                 "in-degree histogram; pass degree_graphs")
            from ..interop.pyg_export import to_pyg_batch

            items = to_pyg_batch(dgl.batch(list(degree_graphs)), torch.zeros(len(degree_graphs))).to_data_list()
            pna_degrees = reference_degree_histogram(ref_dir, items)
        model = load_reference_from_config(ref_dir, self.path, self.dim_in, self.dim_out, seed,
                                           pna_degrees=pna_degrees)
        self.reference_cfg = importlib.import_module("torch_geometric.graphgym.config").cfg.clone()
        found = {match.group(3, 4): value.detach().clone() for match, value in
                 ((_INPUT_STATISTICS.match(name), value) for name, value in model.named_buffers()) if match}
        self.reference_input_statistics = {key: (found[kind, "mean"], found[kind, "std"])
                                           for kind, key in (("node", "x"), ("edge", "edge_attr"))
                                           if (kind, "mean") in found} or None
        return model


    def paired_models(self, ref_dir: str, graph: dgl.DGLGraph, seed: int = 0
                      ) -> Tuple[torch.nn.Module, torch.nn.Module]:
        """(the reference's model, ours) with the same weights; ``graph``'s graphs stand for the training split
        where a PNA layer needs their degrees (its histogram, our degree statistics)."""
        from geaet_dgl.interop.reference_names import reference_to_ours
        from geaet_dgl.models import build_model
        from geaet_dgl.models.geaet import set_degree_statistics

        graphs = dgl.unbatch(graph)
        theirs = self.reference_model(ref_dir, seed=seed, degree_graphs=graphs)
        ours = build_model(self.model)
        set_degree_statistics(ours, graphs)
        state = {name: value for name, value in theirs.state_dict().items()
                 if not _INPUT_STATISTICS.match(name)}  # its encoders' input standardisation: our loader's instead
        ours.load_state_dict(reference_to_ours(state), strict=True)
        return theirs, ours


#: datasets with a synthetic generator of their shape (every dataset a --config file can name)
BENCHMARK_DATASETS = SUPPORTED_PRESETS


def config_subject(path: "os.PathLike | str") -> ConfigSubject:
    """Read ``path`` (see :func:`~geaet_dgl.interop.reference_yaml.read_reference_config`); a one-line
    error if its dataset has no synthetic generator here."""
    ref = read_reference_config(path)
    dataset = ref.preset.dataset
    if dataset not in BENCHMARK_DATASETS:
        raise UnsupportedPreset(f"--config {os.path.basename(os.fspath(path))}: dataset {dataset!r} has no "
                                f"synthetic graph generator for benchmarking; supported: "
                                f"{', '.join(BENCHMARK_DATASETS)}")
    spec = next(d for d in DATASETS.values() if d.name == dataset)
    return ConfigSubject(path=os.fspath(path), model=ref.preset.model, train=ref.preset.train, dataset=dataset,
                         laplacian_norm=ref.data.get("laplacian_norm") or laplacian_norm_of(dataset),
                         dim_in=spec.node_in_feats, dim_out=spec.out_feats)
