"""A 2-layer GCN (DGL's GraphConv) on a graph file with node masks: the reference a node run is compared with.

Full-batch training, Kipf and Welling's settings (64 hidden units, dropout 0.5, Adam lr 0.01, weight decay
5e-4, self-loops, symmetric normalisation), the test accuracy at the best validation epoch; mean and std over
``--seeds``.

    python benchmarks/gcn_reference.py GRAPH.bin --seeds 0 1 2
"""
import argparse
import statistics
import sys

import _common  # noqa: F401  (puts the repository on sys.path)

import dgl
import torch
import torch.nn.functional as F
from dgl.nn import GraphConv


class GCN(torch.nn.Module):
    def __init__(self, in_feats: int, hidden: int, classes: int, dropout: float):
        super().__init__()
        self.conv1, self.conv2, self.dropout = GraphConv(in_feats, hidden), GraphConv(hidden, classes), dropout

    def forward(self, graph: dgl.DGLGraph, feat: torch.Tensor) -> torch.Tensor:
        hidden = F.relu(self.conv1(graph, F.dropout(feat, self.dropout, self.training)))
        return self.conv2(graph, F.dropout(hidden, self.dropout, self.training))


def train_gcn(graph: dgl.DGLGraph, seed: int, epochs: int = 200, hidden: int = 64, dropout: float = 0.5,
              lr: float = 0.01, weight_decay: float = 5e-4) -> dict:
    """-> {"val": best val accuracy, "test": test accuracy at that epoch, "epoch": it}."""
    torch.manual_seed(seed)
    graph = dgl.add_self_loop(dgl.remove_self_loop(graph))
    feat, label = graph.ndata["feat"].float(), graph.ndata["label"]
    masks = {split: graph.ndata[f"{split}_mask"].bool() for split in ("train", "val", "test")}
    model = GCN(feat.shape[1], hidden, int(label.max()) + 1, dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best = {"val": -1.0}
    for epoch in range(1, epochs + 1):
        model.train()
        loss = F.cross_entropy(model(graph, feat)[masks["train"]], label[masks["train"]])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            predicted = model(graph, feat).argmax(1)
        accuracy = {split: float((predicted[m] == label[m]).float().mean()) for split, m in masks.items()}
        if accuracy["val"] > best["val"]:
            best = {"val": accuracy["val"], "test": accuracy["test"], "epoch": epoch}
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graph_file")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    graph = dgl.load_graphs(args.graph_file)[0][0]
    results = [train_gcn(graph, seed, args.epochs) for seed in args.seeds]
    for seed, result in zip(args.seeds, results):
        print(f"seed {seed}: best epoch {result['epoch']}, val {result['val']:.4f}, test {result['test']:.4f}")
    tests = [result["test"] for result in results]
    spread = statistics.stdev(tests) if len(tests) > 1 else 0.0
    print(f"2-layer GCN test accuracy: {statistics.fmean(tests):.4f} ± {spread:.4f} over {len(tests)} seed(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
