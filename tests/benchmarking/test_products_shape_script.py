"""benchmarks/products_shape.py: a graph with ogbn-products' shape (degrees, split, widths), checked independently."""
import importlib.util
from pathlib import Path

import numpy as np
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "products_shape.py"


def _script():
    spec = importlib.util.spec_from_file_location("products_shape", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_products_shaped_graph_has_its_degrees_split_and_widths():
    shape = _script()
    n = 6000
    g = shape.products_graph(n, mean_degree=50.52, tail=1.5, max_degree=17_481.0, homophily=0.8, signal=0.3, seed=0)
    assert g.idtype == torch.int32 and g.formats()["created"] == ["coo"]
    src, dst = (t.long().numpy() for t in g.edges())
    assert (src != dst).all()
    keys = src * n + dst
    assert len(np.unique(keys)) == len(keys)  # no repeated edge
    assert np.array_equal(np.sort(keys), np.sort(dst * n + src))  # every edge stored both ways
    degrees = np.bincount(dst, minlength=n)
    assert abs(degrees.mean() - 50.52) < 0.05
    assert np.median(degrees) < 0.8 * degrees.mean() and degrees.max() > 10 * degrees.mean()  # a heavy tail
    labels = g.ndata["label"].numpy()
    assert g.ndata["feat"].shape == (n, 100) and g.ndata["feat"].dtype == torch.float32
    assert labels.max() < 47 and np.bincount(labels).argmax() == 0  # Zipf: class 0 the largest
    # 80% of the draws inside a class (plus chance); repeated pairs, dropped, are likelier inside a class
    assert (labels[src] == labels[dst]).mean() > 0.7
    masks = [g.ndata[name].numpy() for name in ("train_mask", "val_mask", "test_mask")]
    assert not (masks[0] & masks[1]).any() and not (masks[1] & masks[2]).any() and not (masks[0] & masks[2]).any()
    for mask, size in zip(masks, shape.PRODUCTS_SPLIT):
        assert abs(mask.sum() - size / shape.PRODUCTS_NODES * n) <= 1
