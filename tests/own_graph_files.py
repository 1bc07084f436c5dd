"""Small DGL graph files written by the tests: the user's own graphs for each task."""
import dgl
import torch

#: --set overrides that shrink the geaet preset to a few thousand parameters.
TINY_GEAET = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2, "model.pe_k": 4,
              "model.pe_dim": 4, "train.batch_size": 8, "train.warmup_epochs": 1}


def tiny_args(extra_settings=None) -> list:
    args = []
    for key, value in {**TINY_GEAET, **(extra_settings or {})}.items():
        args += ["--set", f"{key}={value}"]
    return args


def make_graphs(count: int, seed: int = 0, node_feats: int = 3, edge_feats: int = 2, int_types: bool = False):
    """``count`` random graphs of 4..11 nodes with ``ndata['feat']`` (float, or integer types 0..4 with
    ``int_types``), ``edata['feat']`` (omitted for ``edge_feats=0``) and per-node labels ``ndata['label']``
    (whether the first feature is positive)."""
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for _ in range(count):
        n = int(torch.randint(4, 12, (1,), generator=gen))
        src = torch.randint(0, n, (3 * n,), generator=gen)
        dst = torch.randint(0, n, (3 * n,), generator=gen)
        g = dgl.graph((src, dst), num_nodes=n)
        x = torch.randn(n, node_feats, generator=gen)
        g.ndata["feat"] = torch.randint(0, 5, (n, node_feats), generator=gen) if int_types else x
        g.ndata["label"] = (x[:, 0] > 0).long()
        if edge_feats:
            g.edata["feat"] = torch.rand(g.num_edges(), edge_feats, generator=gen)
        graphs.append(g)
    return graphs


def graph_targets(graphs) -> torch.Tensor:
    """(G,) float: each graph's mean first node feature (a learnable target)."""
    return torch.stack([g.ndata["feat"][:, 0].float().mean() for g in graphs])


def write_task_file(path, task: str, count: int = 48, seed: int = 0, **kwargs):
    """Write a graph file for ``task`` ('graph-classification', 'graph-regression', 'node-classification');
    return its graphs (as written) and graph labels (None for node classification)."""
    graphs = make_graphs(count, seed, **kwargs)
    if task == "node-classification":
        dgl.save_graphs(str(path), graphs)
        return graphs, None
    for g in graphs:
        g.ndata.pop("label")
    targets = graph_targets(graphs)
    labels = (targets > 0).long() if task == "graph-classification" else targets
    dgl.save_graphs(str(path), graphs, {"label": labels})
    return graphs, labels
