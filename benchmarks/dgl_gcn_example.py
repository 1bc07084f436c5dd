"""DGL's own GCN example on a Planetoid set, as DGL ships it (examples/pytorch/gcn/train.py of DGL 2.x): the
comparison point of ``time_to_result.py``.

Kipf and Welling's 2-layer GCN (16 hidden units, ReLU, dropout 0.5, self-loops added by ``AddSelfLoop``), Adam lr
0.01 with weight decay 5e-4, 200 full-graph epochs with the validation accuracy printed after each, then the test
accuracy. The one change: ``--data-dir`` is DGL's ``raw_dir`` (the example reads ``~/.dgl``), so the same files
are read offline.

    python benchmarks/dgl_gcn_example.py --dataset cora --data-dir ~/.dgl
"""
import argparse

import dgl.nn as dglnn
import torch
import torch.nn as nn
import torch.nn.functional as F
from dgl import AddSelfLoop
from dgl.data import CiteseerGraphDataset, CoraGraphDataset, PubmedGraphDataset


class GCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.GraphConv(in_size, hid_size, activation=F.relu),
                                     dglnn.GraphConv(hid_size, out_size)])
        self.dropout = nn.Dropout(0.5)

    def forward(self, g, features):
        h = features
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(g, h)
        return h


def evaluate(g, features, labels, mask, model):
    model.eval()
    with torch.no_grad():
        logits = model(g, features)[mask]
        return (logits.argmax(1) == labels[mask]).float().mean().item()


def train(g, features, labels, masks, model):
    loss_fcn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for epoch in range(200):
        model.train()
        logits = model(g, features)
        loss = loss_fcn(logits[masks[0]], labels[masks[0]])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        acc = evaluate(g, features, labels, masks[1], model)
        print(f"Epoch {epoch:05d} | Loss {loss.item():.4f} | Accuracy {acc:.4f} ")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="cora", choices=["cora", "citeseer", "pubmed"])
    parser.add_argument("--data-dir", default=None, help="DGL's raw_dir (default DGL's own, ~/.dgl)")
    args = parser.parse_args()
    kinds = {"cora": CoraGraphDataset, "citeseer": CiteseerGraphDataset, "pubmed": PubmedGraphDataset}
    data = kinds[args.dataset](transform=AddSelfLoop(), raw_dir=args.data_dir)
    g = data[0].int()
    features, labels = g.ndata["feat"], g.ndata["label"]
    masks = g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"]
    model = GCN(features.shape[1], 16, data.num_classes)
    print("Training...")
    train(g, features, labels, masks, model)
    print("Testing...")
    print(f"Test accuracy {evaluate(g, features, labels, masks[2], model):.4f}")
