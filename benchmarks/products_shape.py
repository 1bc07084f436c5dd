"""A graph file with ogbn-products' shape, for measuring memory and time at its scale: ``train --dataset FILE.bin``.

ogbn-products: 2,449,029 nodes, 61,859,140 undirected edges (123,718,280 stored both ways: mean degree
50.5), a heavy-tailed degree spread (median far below the mean, a few nodes with thousands of
neighbours), 100 float features, 47 classes, the split 196,615 / 39,323 / 2,213,091. This writes one
DGL graph of ``--nodes`` nodes with the same mean degree, split proportions, feature width and classes:

* **degrees**: a Chung-Lu graph. Node ``i`` gets a weight ``w_i`` from a Pareto law of tail exponent
  ``--tail`` (``P(w > x) ~ x^-tail``, 1.5 by default: a degree density falling as ``d^-2.5``), capped at
  ``--max-degree`` and scaled to the mean degree; each edge draws its two end points with probability
  proportional to the weights, so a node's expected degree is its weight. Repeated pairs and loops are
  dropped and more pairs drawn until the undirected count reaches ``nodes x mean degree / 2``;
* **labels**: 47 classes of unequal sizes (a Zipf law of exponent 1, as products' categories are); a
  fraction ``--homophily`` of the edges (0.8, about products' edge homophily) draws its second end
  point inside the first one's class (again in proportion to the weights), the rest anywhere;
* **features**: ``signal x centre[class] + N(0, I)`` in 100 float32 columns (the graph carries the rest
  of the label);
* **masks**: a seeded random split in products' proportions (8.03% / 1.61% / 90.37%).

Memory: the edges live in NumPy int64 / int32 arrays drawn in chunks (no Python lists of edges); the
graph is stored with int32 ids in COO only, both directions. At the full size the generator peaks at
4.2 GiB (252 s on the shared 2-core machine). Prints the degree summary (mean, median, 99th percentile,
max) and the file's size.

    python benchmarks/products_shape.py --nodes 300000 --out /tmp/products/p300k.bin
    python benchmarks/products_shape.py --out /tmp/products/products.bin          # the full 2,449,029 nodes
"""
import argparse
import os
import time

import numpy as np

PRODUCTS_NODES = 2_449_029
PRODUCTS_UNDIRECTED_EDGES = 61_859_140
PRODUCTS_SPLIT = (196_615, 39_323, 2_213_091)
FEATURES = 100
CLASSES = 47


def degree_weights(rng: np.random.Generator, nodes: int, mean_degree: float, tail: float,
                   max_degree: float) -> np.ndarray:
    """(nodes,) float64 expected degrees: Pareto(``tail``) draws capped at ``max_degree``, scaled to ``mean_degree``
    (the cap is applied again after scaling, twice, so both hold within a fraction of a percent)."""
    weights = rng.pareto(tail, nodes) + 1.0
    for _ in range(3):
        weights *= mean_degree / weights.mean()
        np.minimum(weights, max_degree, out=weights)
    return weights


def class_labels(rng: np.random.Generator, nodes: int, classes: int) -> np.ndarray:
    """(nodes,) int64 labels with Zipf(1) class sizes (class k has a share proportional to 1 / (k + 1))."""
    share = 1.0 / np.arange(1, classes + 1)
    return rng.choice(classes, size=nodes, p=share / share.sum()).astype(np.int64)


def draw_pairs(rng: np.random.Generator, count: int, weights: np.ndarray, labels: np.ndarray,
               homophily: float, chunk: int = 8_000_000) -> np.ndarray:
    """(<= count,) int64 keys ``min * N + max`` of distinct undirected pairs without loops, drawn Chung-Lu style
    (both end points in proportion to ``weights``; a ``homophily`` fraction of second end points in the first's
    class). Drawn ``chunk`` pairs at a time: the working memory is a few ``chunk``-long arrays."""
    n = len(weights)
    order = np.argsort(labels, kind="stable")
    cumulative = np.cumsum(weights[order])
    class_start = np.searchsorted(labels[order], np.arange(labels.max() + 2))
    before = np.concatenate([[0.0], cumulative])  # before[i]: weight of the sorted nodes ahead of position i
    class_lo, class_hi = before[class_start[:-1]], before[class_start[1:]]
    keys = []
    for start in range(0, count, chunk):
        m = min(chunk, count - start)
        u = order[np.minimum(np.searchsorted(cumulative, rng.random(m) * cumulative[-1], side="right"), n - 1)]
        inside = rng.random(m) < homophily
        target = rng.random(m) * cumulative[-1]
        cls = labels[u[inside]]
        target[inside] = class_lo[cls] + rng.random(int(inside.sum())) * (class_hi[cls] - class_lo[cls])
        v = order[np.minimum(np.searchsorted(cumulative, target, side="right"), n - 1)]
        keep = u != v
        u, v = u[keep], v[keep]
        keys.append(np.minimum(u, v) * n + np.maximum(u, v))
        del u, v, inside, target, cls, keep
    return np.unique(np.concatenate(keys))


def undirected_pairs(rng: np.random.Generator, edges: int, weights: np.ndarray, labels: np.ndarray,
                     homophily: float) -> np.ndarray:
    """(edges,) int64 sorted keys of distinct pairs: draws until ``edges`` are distinct, then keeps a random
    ``edges`` of them."""
    keys = draw_pairs(rng, int(edges * 1.05), weights, labels, homophily)
    while len(keys) < edges:
        more = draw_pairs(rng, int((edges - len(keys)) * 1.5) + 1000, weights, labels, homophily)
        keys = np.union1d(keys, more)
        del more
    if len(keys) > edges:
        keys = np.sort(rng.choice(keys, size=edges, replace=False))
    return keys


def both_directions(keys: np.ndarray, nodes: int, chunk: int = 8_000_000):
    """(2 E,) int32 sources and destinations of the undirected pairs ``keys`` (``min * N + max``), each pair once
    each way, filled ``chunk`` keys at a time (no int64 copy of all edges)."""
    half = len(keys)
    src = np.empty(2 * half, dtype=np.int32)
    dst = np.empty(2 * half, dtype=np.int32)
    for start in range(0, half, chunk):
        low, high = np.divmod(keys[start:start + chunk], nodes)
        stop = start + len(low)
        src[start:stop], dst[start:stop] = low, high
        src[half + start:half + stop], dst[half + start:half + stop] = high, low
    return src, dst


def products_graph(nodes: int, mean_degree: float, tail: float, max_degree: float, homophily: float,
                   signal: float, seed: int):
    """The DGL graph (int32 ids, COO both ways) with ``feat`` (N, 100) float32, ``label`` (N,) int64 and the
    three (N,) bool masks in products' proportions."""
    import dgl
    import torch

    rng = np.random.default_rng(seed)
    weights = degree_weights(rng, nodes, mean_degree, tail, max_degree)
    labels = class_labels(rng, nodes, CLASSES)
    keys = undirected_pairs(rng, int(round(nodes * mean_degree / 2)), weights, labels, homophily)
    del weights
    src, dst = both_directions(keys, nodes)
    del keys
    graph = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=nodes, idtype=torch.int32)
    del src, dst
    centres = rng.standard_normal((CLASSES, FEATURES), dtype=np.float32)
    feat = rng.standard_normal((nodes, FEATURES), dtype=np.float32)
    feat += signal * centres[labels]
    graph.ndata["feat"] = torch.from_numpy(feat)
    graph.ndata["label"] = torch.from_numpy(labels)
    order = rng.permutation(nodes)
    start = 0
    for name, size in zip(("train_mask", "val_mask", "test_mask"), PRODUCTS_SPLIT):
        count = int(round(size / PRODUCTS_NODES * nodes))
        mask = np.zeros(nodes, dtype=bool)
        mask[order[start:start + count]] = True
        graph.ndata[name] = torch.from_numpy(mask)
        start += count
    return graph


def degree_summary(graph) -> str:
    """Mean, median, 99th percentile and largest in-degree, and the share of nodes of degree under 10."""
    degrees = graph.in_degrees().numpy()
    return (f"degree mean {degrees.mean():.1f}, median {np.median(degrees):.0f}, 99th percentile "
            f"{np.percentile(degrees, 99):.0f}, max {degrees.max()}, under 10: {(degrees < 10).mean():.1%}")


def write_products_graph(args: argparse.Namespace):
    """Build the graph ``args`` describe and write it to ``args.out`` (COO only; a temporary name, then renamed)."""
    import dgl

    graph = products_graph(args.nodes, args.mean_degree, args.tail, args.max_degree, args.homophily,
                           args.signal, args.seed)
    print(degree_summary(graph), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    partial = args.out + ".partial"
    dgl.save_graphs(partial, [graph], formats="coo")
    os.replace(partial, args.out)
    return graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=PRODUCTS_NODES)
    parser.add_argument("--mean-degree", type=float, default=2 * PRODUCTS_UNDIRECTED_EDGES / PRODUCTS_NODES,
                        help="directed edges per node (products: 50.52)")
    parser.add_argument("--tail", type=float, default=1.5, help="Pareto tail exponent of the expected degrees")
    parser.add_argument("--max-degree", type=float, default=17_481.0, help="cap on a node's expected degree")
    parser.add_argument("--homophily", type=float, default=0.8, help="fraction of edges drawn inside a class")
    parser.add_argument("--signal", type=float, default=0.3, help="class centre's weight in the features")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="the graph file to write (*.bin)")
    args = parser.parse_args()
    start = time.perf_counter()
    graph = write_products_graph(args)
    print(f"wrote {args.out}: {graph} ({os.path.getsize(args.out) / 2 ** 30:.2f} GiB) in "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
