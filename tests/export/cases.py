"""Small trained-looking runs of the covered presets, their checkpoints, and batches of random graphs for them.

Each case is a preset with small widths (``geaet-dgl presets``), random weights and BatchNorm statistics far
from their defaults (:func:`tests.inference.layer_menu.trained_looking`), saved as a checkpoint the way a run
saves one. The graphs carry the features the preset reads; :func:`prepared` attaches the encodings as
``geaet-dgl predict`` does (:func:`geaet_dgl.scoring.predict.prepare_graphs`).
"""
from typing import Dict, List, Sequence, Tuple

import dgl
import torch

from geaet_dgl.training import make_run_config
from geaet_dgl.export.writer import inputs_of_batch
from geaet_dgl.models import build_model
from geaet_dgl.scoring.predict import prepare_graphs
from geaet_dgl.training.checkpoint import save_checkpoint
from geaet_dgl.training.schedule import build_optimizer, build_scheduler
from tests.inference.layer_menu import trained_looking

#: case -> (preset, overrides): the MNIST/CIFAR10 paper preset (GatedGCN + Transformer + GEANet, ESLapPE),
#: a ZINC-like run with GINE and RWSE, ZINC's own preset (GatedGCN, RWSE, embeddings), PATTERN (node head, GEANet
#: edge and shared units), Peptides-struct (GCN, LapPE DeepSet, GELU, mlp_graph head) and the node run (GCN,
#: GEANet in graph scope, the input GCN mixed into the logits), and MNIST with the paper's GEANet in graph scope,
#: the per-graph LayerNorm and jumping knowledge.
CASES: Dict[str, Tuple[str, Dict[str, object]]] = {
    "mnist": ("mnist", {"model.hidden_dim": 16, "model.num_layers": 2}),
    "zinc-gine": ("zinc", {"model.hidden_dim": 32, "model.num_layers": 2, "model.mpnn": "gine"}),
    "zinc": ("zinc", {"model.hidden_dim": 32, "model.num_layers": 2}),
    "pattern": ("pattern", {"model.hidden_dim": 16, "model.num_layers": 2}),
    "peptides-struct": ("peptides-struct", {"model.hidden_dim": 32, "model.num_layers": 2}),
    "geaet-node": ("geaet-node", {"model.hidden_dim": 16, "model.node_in_feats": 5}),
    "mnist-paper-geanet": ("mnist", {"model.hidden_dim": 16, "model.num_layers": 2, "model.geanet.variant": "paper",
                                     "model.geanet.scope": "graph", "model.norm": "layer", "model.jk": "max"}),
}

#: The rest of the layer menu the exporter covers: GAT, PNA and GENConv as local MPNNs on ZINC-like runs,
#: ogbg-molhiv's preset (its head: GraphGPS's san_graph MLP), ogbg-code2's (the AST encoder, the sequence head), SignNet on a ZINC-like run, the node run with
#: the hop branch (H2GCN's ego / neighbour split) and with APPNP's propagation branch, and the Performer on MNIST, also counting the
#: padding keys as the reference does (``model.performer_pad_keys``), and Graphormer on a ZINC-like run (degree
#: embeddings, the biased Transformer's spatial and path bias, paths cut at S = 5).
MENU_CASES: Dict[str, Tuple[str, Dict[str, object]]] = {
    "zinc-gat": ("zinc", {"model.hidden_dim": 32, "model.num_layers": 2, "model.mpnn": "gat"}),
    "zinc-pna": ("zinc", {"model.hidden_dim": 32, "model.num_layers": 2, "model.mpnn": "pna"}),
    "zinc-genconv": ("zinc", {"model.hidden_dim": 32, "model.num_layers": 2, "model.mpnn": "genconv"}),
    "ogbg-molhiv": ("ogbg-molhiv", {"model.hidden_dim": 32, "model.num_layers": 2}),
    "cifar10": ("cifar10", {"model.hidden_dim": 16, "model.num_layers": 2}),
    "cluster": ("cluster", {"model.hidden_dim": 16, "model.num_layers": 2}),
    "node-sage": ("geaet-node", {"model.hidden_dim": 16, "model.node_in_feats": 5, "model.residual": True,
                                 "model.mpnn": "sage"}),
    "node-hops": ("geaet-node", {"model.hidden_dim": 16, "model.node_in_feats": 5, "model.input_branch": "hops",
                                 "model.input_branch_hops": 2}),
    "node-appnp": ("geaet-node", {"model.hidden_dim": 16, "model.node_in_feats": 5, "model.input_branch": "appnp",
                                  "model.input_branch_hops": 3, "model.input_branch_mix": "logits"}),
    "ogbg-code2": ("ogbg-code2", {"model.hidden_dim": 16, "model.num_layers": 1}),
    "zinc-signnet": ("zinc", {"model.hidden_dim": 32, "model.num_layers": 2, "model.pe": "signnet"}),
    "mnist-performer": ("mnist", {"model.hidden_dim": 16, "model.num_layers": 2, "model.attention": "performer"}),
    "mnist-performer-padded": ("mnist", {"model.hidden_dim": 16, "model.num_layers": 2, "model.attention": "performer",
                                         "model.performer_pad_keys": True}),
    "zinc-graphormer": ("zinc", {"model.hidden_dim": 32, "model.num_layers": 2, "model.attention": "biased_transformer",
                                 "model.graphormer.enable": True, "model.graphormer.num_edge_types": 4,
                                 "model.graphormer.spatial_types": 5}),
}

#: (nodes, edges) of the graphs of two batches: unequal sizes, a single isolated node, graphs without edges,
#: a graph with isolated nodes among its edges, self-loops by chance.
FIRST_BATCH = ((6, 14), (1, 0), (4, 0), (9, 20), (3, 3))
SECOND_BATCH = ((12, 30), (2, 1), (5, 8))


def case_run(case: str, **more: object):
    """The run configuration of ``case``, ``more`` overrides (``{"train.batch_size": 3}``) on top."""
    preset, overrides = {**CASES, **MENU_CASES}[case]
    dataset = "synthetic" if preset == "geaet-node" else preset  # a node preset names no dataset: no data is read
    return make_run_config(dataset, preset=preset, overrides={**overrides, **more})


def save_case_checkpoint(case: str, path, **more: object) -> Tuple[object, torch.nn.Module]:
    """A checkpoint of ``case`` (``more``: further overrides) with trained-looking random weights -> (run, model in
    eval mode)."""
    run = case_run(case, **more)
    return run, save_run_checkpoint(run, path)


def save_run_checkpoint(run, path) -> torch.nn.Module:
    """A checkpoint of ``run``'s model with trained-looking random weights at ``path`` -> the model in eval mode."""
    torch.manual_seed(7)
    model = trained_looking(build_model(run.model), seed=3)
    optimizer = build_optimizer(model.parameters(), 1e-3, 0.0)
    save_checkpoint(path, run_config=run.to_dict(), model=model, optimizer=optimizer,
                    scheduler=build_scheduler(optimizer, 1, 3), epoch=1, step=0, global_step=1, best=None,
                    history=[], progress=None)
    return model.eval()


def random_graphs(model_config, sizes: Sequence[Tuple[int, int]], seed: int = 0) -> List[dgl.DGLGraph]:
    """Graphs of ``sizes`` (nodes, edges) with random edges and the features ``model_config`` reads, as a graph
    file stores them (float features, integer types)."""
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for nodes, edges in sizes:
        src, dst = torch.randint(0, nodes, (edges,), generator=gen), torch.randint(0, nodes, (edges,), generator=gen)
        g = dgl.graph((src, dst), num_nodes=nodes)
        if model_config.node_encoder in ("embedding", "typedict", "ast"):
            # (the AST encoder clips depths past its last embedding: some are drawn past it)
            vocab = list(model_config.node_vocab_sizes[:-1]) + [model_config.node_vocab_sizes[-1] *
                                                                (2 if model_config.node_encoder == "ast" else 1)]
            g.ndata["feat"] = torch.stack([torch.randint(0, v, (nodes,), generator=gen) for v in vocab], 1)
        else:
            g.ndata["feat"] = torch.randn(nodes, model_config.node_in_feats, generator=gen)
        if model_config.edge_encoder in ("embedding", "typedict"):
            g.edata["feat"] = torch.stack([torch.randint(0, v, (edges,), generator=gen)
                                           for v in model_config.edge_vocab_sizes], 1)
        else:
            g.edata["feat"] = torch.randn(edges, model_config.edge_in_feats, generator=gen)
        graphs.append(g)
    return graphs


def prepared(run, graphs: List[dgl.DGLGraph]) -> List[dgl.DGLGraph]:
    """``graphs`` conformed to the run's model, transformed and given their encodings as ``predict`` does (in place)."""
    prepare_graphs(graphs, "graphs.bin", run)
    return graphs


def exported_inputs(graphs: Sequence[dgl.DGLGraph], widths: Dict[str, int]) -> Tuple[torch.Tensor, ...]:
    """The exported model's inputs for ``graphs`` batched (after :func:`prepared`; the cases have no input
    transform, so their stored features are the raw ones)."""
    return inputs_of_batch(dgl.batch(list(graphs)), widths)
