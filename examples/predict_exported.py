"""Predict graphs with a model written by ``geaet-dgl export``, without DGL and without geaet-dgl.

    python examples/predict_exported.py MODEL GRAPHS.npz --out PRED.csv

MODEL is a TorchScript file (run with plain PyTorch, any version that reads it) or an ONNX file (run with
onnxruntime). GRAPHS.npz holds the graphs one after the other:

==============  ==============  ===========================================================
``num_nodes``   (G,)            nodes of each graph
``num_edges``   (G,)            edges of each graph
``x``           (sum N, F)      node features as the training data stored them
``edge_index``  (2, sum E)      source and destination of each edge, node ids local to its graph
``edge_attr``   (sum E, F_e)    edge features (only where the model reads them)
==============  ==============  ===========================================================

The encodings the model reads (Laplacian eigenvectors and eigenvalues, random-walk landing probabilities,
Graphormer's shortest-path lengths and the edge types along the shortest paths) are computed here with NumPy,
with the settings stored in the file, exactly as geaet-dgl computes them (its dense route, graphs of up to 2,048
nodes). Graphormer's degrees are computed here too, to refuse in one line a degree the model's tables lack; files
of ``export_format`` 3 compute them inside the model, files of format 2 read them as an input. Graphs are
batched as ``geaet-dgl predict`` batches them (the run's batch size; one node-level graph as a whole), and the
CSV has ``predict``'s columns:
``index, predicted, prob_0..`` (classes), ``index, value..`` (regression), ``graph, node, ...`` for nodes.
Only NumPy and PyTorch (or onnxruntime) are imported.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

METADATA_NAME = "geaet_export.json"
INPUT_NAMES = ("x", "edge_index", "edge_attr", "node_counts", "lap_pe", "lap_eigval", "rwse", "spatial_types",
               "path_types")
#: Inputs of files of export_format 2 (Graphormer's degrees an input; format 3 computes them inside the model).
FORMAT_2_INPUTS = INPUT_NAMES[:7] + ("degrees",) + INPUT_NAMES[7:]
#: Inputs of files of export_format 1 (before Graphormer's three).
FORMAT_1_INPUTS = INPUT_NAMES[:7]
#: Largest graph whose encodings geaet-dgl computes with dense matrices (its sparse route is not copied here).
DENSE_MAX_NODES = 2048


class ExampleError(Exception):
    """A problem with the inputs, printed as one line."""


# ------------------------------------------------------------------------------------------------------- the model

class Model:
    """An exported model: ``settings`` (the JSON stored in it) and ``run(inputs) -> (rows, width)`` array."""

    def __init__(self, path: str):
        with open(path, "rb") as handle:
            torchscript = handle.read(2) == b"PK"  # TorchScript files are zip archives, ONNX files protobuf
        if torchscript:
            import torch

            extra = {METADATA_NAME: ""}
            self._module = torch.jit.load(path, _extra_files=extra)
            self.settings = json.loads(extra[METADATA_NAME])
            self.runtime = f"TorchScript (torch {torch.__version__})"
        else:
            try:
                import onnxruntime
            except ImportError:
                raise ExampleError(f"{path} is an ONNX file: pip install onnxruntime to run it") from None
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3  # errors only: not its notes on shapes the exporter inferred as fixed
            self._session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            self._names = [item.name for item in self._session.get_inputs()]
            meta = self._session.get_modelmeta().custom_metadata_map
            if METADATA_NAME not in meta:
                raise ExampleError(f"{path} was not written by geaet-dgl export (no {METADATA_NAME})")
            self.settings = json.loads(meta[METADATA_NAME])
            self.runtime = f"onnxruntime {onnxruntime.__version__}"
        self.torchscript = torchscript
        self.input_names = inputs_of_format(self.settings.get("export_format", 1))

    def run(self, inputs: Dict[str, np.ndarray]) -> np.ndarray:
        if self.torchscript:
            import torch

            with torch.no_grad():
                return self._module(*(torch.from_numpy(inputs[name]) for name in self.input_names)).numpy()
        return self._session.run(None, {name: inputs[name] for name in self._names})[0]


def inputs_of_format(export_format: int) -> Tuple[str, ...]:
    """The forward's inputs, in order, of a file of ``export_format`` (1: seven, 2: ten, 3 and later: nine)."""
    if export_format < 2:
        return FORMAT_1_INPUTS
    return FORMAT_2_INPUTS if export_format == 2 else INPUT_NAMES


# --------------------------------------------------------------------------------------------------- the encodings

def laplacian_pe(src: np.ndarray, dst: np.ndarray, num_nodes: int, k: int, norm: str
                 ) -> Tuple[np.ndarray, np.ndarray]:
    """(N, k) eigenvectors and (k,) eigenvalues of the graph's Laplacian, as geaet-dgl computes them: the
    undirected edge set without self-loops, ``I - D^-1/2 A D^-1/2`` ('sym') or ``D - A`` ('none'), the k
    smallest eigenpairs (``np.linalg.eigh``), eigenvalues clipped at 0, unit eigenvectors, zero padding."""
    eigvecs = np.zeros((num_nodes, k), dtype=np.float32)
    eigvals = np.zeros((k,), dtype=np.float32)
    if k == 0 or num_nodes == 0:
        return eigvecs, eigvals
    adj = np.zeros((num_nodes, num_nodes), dtype=np.float64)
    adj[src, dst] = 1.0
    adj[dst, src] = 1.0
    np.fill_diagonal(adj, 0.0)
    deg = adj.sum(axis=1)
    if norm == "none":
        lap = np.diag(deg) - adj
    else:
        with np.errstate(divide="ignore"):
            inv_sqrt = np.where(deg > 0, deg ** -0.5, 0.0)
        lap = np.eye(len(deg)) - inv_sqrt[:, None] * adj * inv_sqrt[None, :]
    vals, vecs = np.linalg.eigh(lap)
    keep = np.argsort(vals, kind="stable")[:k]
    vals, vecs = np.clip(vals[keep], 0.0, None), vecs[:, keep]
    vecs = vecs / np.clip(np.linalg.norm(vecs, axis=0, keepdims=True), 1e-12, None)
    eigvecs[:, :len(vals)] = vecs
    eigvals[:len(vals)] = vals
    return eigvecs, eigvals


def random_walk_se(src: np.ndarray, dst: np.ndarray, num_nodes: int, k: int) -> np.ndarray:
    """(N, k) RWSE: column t-1 is the diagonal of ``P^t``, ``P = D_out^-1 A`` on the edges as stored."""
    adj = np.zeros((num_nodes, num_nodes), dtype=np.float64)
    np.add.at(adj, (src, dst), 1.0)
    out_deg = adj.sum(axis=1)
    with np.errstate(divide="ignore"):
        inv = np.where(out_deg > 0, 1.0 / out_deg, 0.0)
    step = inv[:, None] * adj
    out = np.zeros((num_nodes, k), dtype=np.float32)
    power = step
    for t in range(k):
        out[:, t] = np.diagonal(power)
        power = power @ step
    return out


def _successors(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> List[List[int]]:
    """Successors of each node in first-seen edge order, duplicates dropped."""
    succ: List[dict] = [dict() for _ in range(num_nodes)]
    for u, v in zip(src.tolist(), dst.tolist()):
        succ[u][v] = None
    return [list(s) for s in succ]


def _bfs_parents(succ: List[List[int]], source: int) -> Dict[int, int]:
    """Breadth-first parents from ``source`` (-1 for itself), in visiting order."""
    parent, queue, head = {source: -1}, [source], 0
    while head < len(queue):
        u = queue[head]
        head += 1
        for v in succ[u]:
            if v not in parent:
                parent[v] = u
                queue.append(v)
    return parent


def graphormer_encodings(src: np.ndarray, dst: np.ndarray, num_nodes: int, spatial_types: int,
                         edge_types: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Graphormer's encodings as geaet-dgl computes them, on the directed edges as stored: (N, 2) in- and
    out-degrees of the simple graph (duplicate edges once); (N, N) spatial types ``min(d(i -> j), S - 1)``, ``S``
    where j is unreachable; (N, N, S) the types (``edge_types``, None: not computed) of the edges along one
    breadth-first shortest path (successors in first-seen edge order; a pair's last stored edge's type), 0 past
    its end, the path cut to its first S nodes."""
    pairs = np.unique(np.stack([src, dst], axis=1), axis=0) if len(src) else np.zeros((0, 2), np.int64)
    degrees = np.stack([np.bincount(pairs[:, 1], minlength=num_nodes),
                        np.bincount(pairs[:, 0], minlength=num_nodes)], axis=1).astype(np.int64)
    types = np.full((num_nodes, num_nodes), spatial_types, dtype=np.int64)
    paths = np.zeros((num_nodes, num_nodes, spatial_types if edge_types is not None else 0), dtype=np.int64)
    succ = _successors(src, dst, num_nodes)
    type_of = {}
    if edge_types is not None:
        for u, v, t in zip(src.tolist(), dst.tolist(), edge_types.tolist()):
            type_of[(u, v)] = int(t)
    for source in range(num_nodes):
        parent = _bfs_parents(succ, source)
        dist = {source: 0}
        for target in parent:  # a node's parent is visited before it
            if target != source:
                dist[target] = dist[parent[target]] + 1
            types[source, target] = min(dist[target], spatial_types - 1)
            if edge_types is not None:
                path = [target]
                while parent[path[-1]] != -1:
                    path.append(parent[path[-1]])
                path = path[::-1][:spatial_types]
                for k in range(len(path) - 1):
                    paths[source, target, k] = type_of[(path[k], path[k + 1])]
    return degrees, types, paths


def _check_below(index: int, what: str, values: np.ndarray, size: int, setting: str) -> None:
    if values.size and int(values.max()) >= size:
        raise ExampleError(f"graph {index} has {what} {int(values.max())}, but the model's table has {size} entries "
                           f"({setting})")


# ------------------------------------------------------------------------------------------------------ the graphs

def read_graphs(path: str, settings: Dict[str, Any]) -> List[Dict[str, np.ndarray]]:
    """The npz's graphs, each ``{"x", "src", "dst", "edge_attr", "lap_pe", "lap_eigval", "rwse"}``."""
    try:
        data = np.load(path)
    except (OSError, ValueError) as exc:
        raise ExampleError(f"cannot read {path} as an npz file ({exc})") from None
    for key in ("num_nodes", "num_edges", "x", "edge_index"):
        if key not in data:
            raise ExampleError(f"{path} has no {key!r}; it needs num_nodes, num_edges, x, edge_index (and "
                               "edge_attr where the model reads edge features)")
    widths, encodings = settings["input_widths"], settings["encodings"]
    nodes, edges = data["num_nodes"].astype(np.int64), data["num_edges"].astype(np.int64)
    x = np.asarray(data["x"], dtype=np.float32).reshape(int(nodes.sum()), -1)
    if x.shape[1] != widths["x"]:
        raise ExampleError(f"x has {x.shape[1]} columns, the model reads {widths['x']}")
    edge_index = np.asarray(data["edge_index"], dtype=np.int64).reshape(2, int(edges.sum()))
    if widths["edge_attr"]:
        if "edge_attr" not in data:
            raise ExampleError(f"the model reads {widths['edge_attr']} edge features: store edge_attr in {path}")
        edge_attr = np.asarray(data["edge_attr"], dtype=np.float32).reshape(int(edges.sum()), widths["edge_attr"])
    else:
        edge_attr = np.zeros((int(edges.sum()), 0), dtype=np.float32)
    graphormer = settings.get("graphormer") or {}
    edge_types = None
    if graphormer.get("path_types"):
        if "edge_attr" not in data:
            raise ExampleError(f"the model reads the edge types along shortest paths (edge_attr[:, 0]): store "
                               f"edge_attr in {path}")
        edge_types = np.asarray(data["edge_attr"]).reshape(int(edges.sum()), -1)[:, 0].astype(np.int64)
    graphs = []
    node_start = edge_start = 0
    for index, (n, m) in enumerate(zip(nodes.tolist(), edges.tolist())):
        src, dst = edge_index[0, edge_start:edge_start + m], edge_index[1, edge_start:edge_start + m]
        if m and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= n):
            raise ExampleError(f"graph {index}: edge_index holds node ids outside 0..{n - 1}; ids are local to "
                               "each graph")
        k, rwse_k = encodings["lap_pe_k"], encodings["rwse_k"]
        if (k or rwse_k) and n > DENSE_MAX_NODES:
            raise ExampleError(f"graph {index} has {n:,} nodes; this example computes encodings for graphs of at "
                               f"most {DENSE_MAX_NODES:,} (geaet-dgl predict takes larger ones)")
        vecs, vals = laplacian_pe(src, dst, n, k, encodings["laplacian_norm"])
        degrees = np.zeros((n, 0), np.int64)
        spatial, paths = np.zeros((n, 0), np.int64), np.zeros((n, 0, 0), np.int64)
        if graphormer.get("degrees"):
            own_types = None if edge_types is None else edge_types[edge_start:edge_start + m]
            if own_types is not None:
                _check_below(index, "edge type", own_types, graphormer["num_edge_types"],
                             "model.graphormer.num_edge_types")
            degrees, spatial, paths = graphormer_encodings(src, dst, n, max(graphormer["spatial_types"], 1), own_types)
            _check_below(index, "in-degree", degrees[:, 0], graphormer["num_in_degrees"],
                         "model.graphormer.num_in_degrees")
            _check_below(index, "out-degree", degrees[:, 1], graphormer["num_out_degrees"],
                         "model.graphormer.num_out_degrees")
            if not graphormer["spatial_types"]:  # degrees only
                spatial, paths = np.zeros((n, 0), np.int64), np.zeros((n, 0, 0), np.int64)
        graphs.append({
            "x": x[node_start:node_start + n], "src": src, "dst": dst,
            "edge_attr": edge_attr[edge_start:edge_start + m], "lap_pe": vecs,
            "lap_eigval": np.broadcast_to(vals, (n, k)).copy() if encodings["lap_eigval"]
            else np.zeros((n, 0), np.float32),
            "rwse": random_walk_se(src, dst, n, rwse_k) if rwse_k else np.zeros((n, 0), np.float32),
            "degrees": degrees, "spatial_types": spatial, "path_types": paths,
        })
        node_start, edge_start = node_start + n, edge_start + m
    return graphs


def batch_inputs(graphs: Sequence[Dict[str, np.ndarray]]) -> Dict[str, np.ndarray]:
    """The model's inputs for ``graphs`` batched: node ids shifted by the nodes of the graphs before."""
    offsets = np.cumsum([0] + [len(g["x"]) for g in graphs[:-1]])
    src = np.concatenate([g["src"] + offset for g, offset in zip(graphs, offsets)])
    dst = np.concatenate([g["dst"] + offset for g, offset in zip(graphs, offsets)])
    return {
        "x": np.ascontiguousarray(np.concatenate([g["x"] for g in graphs])),
        "edge_index": np.ascontiguousarray(np.stack([src, dst]).astype(np.int64)),
        "edge_attr": np.ascontiguousarray(np.concatenate([g["edge_attr"] for g in graphs])),
        "node_counts": np.array([len(g["x"]) for g in graphs], dtype=np.int64),
        **{name: np.ascontiguousarray(np.concatenate([g[name] for g in graphs]).astype(np.float32))
           for name in ("lap_pe", "lap_eigval", "rwse")},
        "degrees": np.ascontiguousarray(np.concatenate([g["degrees"] for g in graphs])),
        "spatial_types": _padded([g["spatial_types"] for g in graphs]),
        "path_types": _padded([g["path_types"] for g in graphs]),
    }


def _padded(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Per-graph (N_i, N_i, ...) pair arrays as one (sum N_i, W, ...) array, W the largest N_i (0 stays 0)."""
    width = max(part.shape[1] for part in parts)
    out = np.zeros((sum(len(part) for part in parts), width) + parts[0].shape[2:], dtype=np.int64)
    start = 0
    for part in parts:
        out[start:start + len(part), :part.shape[1]] = part
        start += len(part)
    return out


def predict(model: Model, graphs: List[Dict[str, np.ndarray]]) -> List[np.ndarray]:
    """One (width,) output per graph, or one (N_i, width) per graph for node-level models."""
    settings = model.settings
    node_level = settings["output"]["level"] == "node"
    size = len(graphs) if node_level and len(graphs) == 1 else settings["batch_size"]
    outputs: List[np.ndarray] = []
    for start in range(0, len(graphs), size):
        chunk = graphs[start:start + size]
        output = model.run(batch_inputs(chunk))
        output = output.reshape(output.shape[0], -1)
        if node_level:
            outputs.extend(np.split(output, np.cumsum([len(g["x"]) for g in chunk])[:-1]))
        else:
            outputs.extend(output)
    return outputs


# --------------------------------------------------------------------------------------------------------- the CSV

def sigmoid(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float32)
    return (1.0 / (1.0 + np.exp(-values))).astype(np.float32)


def describe(output: np.ndarray, kind: str) -> List[Any]:
    """The row's fields after its ids, as ``geaet-dgl predict`` writes them."""
    if kind == "regression":
        return [float(v) for v in output]
    if kind == "binary":
        p = float(sigmoid(output[0]))
        return [int(p > 0.5), 1.0 - p, p]
    if kind == "multilabel":
        probs = [float(v) for v in sigmoid(output)]
        return [";".join(str(i) for i, p in enumerate(probs) if p > 0.5)] + probs
    logits = output.astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs = probs / probs.sum()
    return [int(np.argmax(output))] + [float(p) for p in probs]


def write_csv(outputs: List[np.ndarray], settings: Dict[str, Any], out: str) -> int:
    """Write ``predict``'s CSV (atomically: a temporary file renamed onto ``out``); returns the rows written."""
    level, kind, width = (settings["output"][key] for key in ("level", "kind", "width"))
    ids = ["graph", "node"] if level == "node" else ["index"]
    if kind == "regression":
        header = ids + (["value"] if width == 1 else [f"value_{i}" for i in range(width)])
    else:
        header = ids + ["predicted"] + [f"prob_{c}" for c in range(2 if kind == "binary" else width)]
    rows = []
    for index, output in enumerate(outputs):
        if level == "node":
            rows.extend([index, node] + describe(vector, kind) for node, vector in enumerate(output))
        else:
            rows.append([index] + describe(output, kind))
    folder = os.path.dirname(os.path.abspath(out))
    handle = tempfile.NamedTemporaryFile("w", dir=folder, prefix=".predict-", suffix=".tmp", delete=False,
                                         newline="")
    try:
        with handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            for row in rows:
                writer.writerow([repr(v) if isinstance(v, float) else v for v in row])
        os.replace(handle.name, out)
    except BaseException:
        os.unlink(handle.name)
        raise
    return len(rows)


def main(argv: Sequence[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a file written by geaet-dgl export (TorchScript or ONNX)")
    parser.add_argument("graphs", help="an npz with num_nodes, num_edges, x, edge_index[, edge_attr]")
    parser.add_argument("--out", required=True, help="where the CSV goes")
    args = parser.parse_args(argv)
    try:
        model = Model(args.model)
        graphs = read_graphs(args.graphs, model.settings)
        rows = write_csv(predict(model, graphs), model.settings, args.out)
    except ExampleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {rows} rows for {len(graphs)} graphs to {args.out} ({model.runtime})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
