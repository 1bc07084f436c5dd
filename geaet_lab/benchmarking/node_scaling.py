"""``benchmark --node-scaling``: one training epoch and one full-graph evaluation on one graph of growing size.

Graphs (:func:`node_task_graph`): ``N`` uniform random points in the unit
square, each node receiving edges from its ``DEGREE = 10`` nearest neighbours
(``E = 10 N``), 8 classes by the cell of a 4 x 2 grid the point lies in, 16
features (the class one-hot plus Gaussian noise of standard deviation 1.5:
a node's own features are a weak hint, its neighbourhood a strong one), and
random train / val / test masks of 50 / 25 / 25 %
(:func:`~geaet_dgl.data.generated.node_graphs.with_masks`).

The network on both sides (:func:`bench_model_config`, :func:`reference_overrides`):
GCN + GEANet (4 heads x 16 units, node units), width 64, 4 layers,
BatchNorm, a 2-layer node head; the reference adds its global attention
where asked. Methods (:data:`METHODS`):

* ``full``: ours, the whole graph every step (``--sampler full``), no global attention;
* ``cluster``: ours, METIS partitions of about 1,000 nodes, 16 per step (``--sampler cluster``);
* ``ref-transformer``: the reference on the whole graph with its dense self-attention
  (``N x N`` per head: it has no sampler);
* ``ref-performer``: the reference on the whole graph with Performer;
* ``ref-none``: the reference on the whole graph without global attention: the
  same layers as ours, so ``full`` and ``ref-none`` compare the implementations.

An epoch is one pass over the training nodes (one step for the whole-graph
methods); the evaluation scores every node with the whole graph as context.
Each (method, size) runs in a fresh process under an address-space limit
(``RLIMIT_AS``), so a size that does not fit fails there with an allocation
error instead of exhausting the machine; the dense attention is not even
started where its ``heads x N^2`` attention scores alone exceed the limit, and no
method at a size where the last size's peak memory, scaled linearly, would. The
first size that fails is reported as the method's out-of-memory size and the
larger ones are not tried. The exponent is the least-squares slope of
log(epoch CPU seconds) against log(N), over all sizes and over ``N >= 1e5``:
with one thread (``--threads 1``) the CPU seconds are the work itself, while
wall seconds on a shared machine also count the time other jobs held the core
(both are reported).

The cost of one memory access is not the same at every size: a 100k-node
graph's ``(N, 64)`` states fit in the last-level cache, a 1M-node graph's do not,
so even one elementwise add costs 2-4x more per node above a few 100k nodes.
Each size therefore also times one **sparse pass** (:func:`sparse_pass`: a
``copy_u_sum`` of ``(N, 64)`` random features over the graph, the kernel every
MPNN layer runs) and one **sparse matvec** (:func:`sparse_matvec`: the
symmetric adjacency in scipy's CSR times a float64 vector, the product Lanczos
repeats), and reports the evaluation in sparse passes and the LapPE in sparse
matvecs; the ``*_per_pass_exponent`` fits show how their work grows once the
machine's per-edge cost at that size is divided out (0: the same number of
passes at every size, i.e. linear in the edges).
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional

import dgl
import numpy as np
import torch

from geaet_dgl.allocator import allocator_mode
from geaet_dgl.data.generated.node_graphs import with_masks
from .jobs import NodeScalingJob
from .scaling import fit_power_law, knn_edges
from .timing import check_device, current_rss_mib, peak_rss_mib, set_threads

DEFAULT_NODE_SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
DEGREE = 10
NUM_CLASSES = 8
FEAT_DIM = 16
FIT_MIN_NODES = 100_000
HIDDEN, LAYERS, HEADS, UNITS = 64, 4, 4, 16
NODES_PER_PART, PARTS_PER_STEP = 1000, 16

METHODS: Dict[str, str] = {
    "full": "ours, the whole graph every step (--sampler full)",
    "cluster": f"ours, METIS parts of ~{NODES_PER_PART:,} nodes, {PARTS_PER_STEP} per step (--sampler cluster)",
    "ref-transformer": "reference, whole graph, dense self-attention (no sampler)",
    "ref-performer": "reference, whole graph, Performer (no sampler)",
    "ref-none": "reference, whole graph, no global attention (our network's layers: like for like with full)",
}
REFERENCE_ATTENTION = {"ref-transformer": "Transformer", "ref-performer": "Performer", "ref-none": "None"}


def node_task_graph(num_nodes: int, degree: int = DEGREE, seed: int = 0) -> dgl.DGLGraph:
    """A kNN graph of ``num_nodes`` random points with features, labels and masks (module docstring).

    Returns
    -------
    dgl.DGLGraph
        ``E = degree * N``; ``ndata['feat']`` ``(N, 16)`` float32,
        ``ndata['label']`` ``(N,)`` int64 in 0..7, ``ndata['train_mask' /
        'val_mask' / 'test_mask']`` ``(N,)`` bool.
    """
    rng = np.random.default_rng(seed)
    points = rng.random((num_nodes, 2))
    src, dst = knn_edges(points, degree)
    graph = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=num_nodes)
    label = (np.minimum((points[:, 0] * 4).astype(np.int64), 3)
             + 4 * np.minimum((points[:, 1] * 2).astype(np.int64), 1))
    feat = np.zeros((num_nodes, FEAT_DIM), dtype=np.float32)
    feat[np.arange(num_nodes), label] = 1.0
    feat += rng.normal(scale=1.5, size=feat.shape).astype(np.float32)
    return with_masks(graph, torch.from_numpy(feat), torch.from_numpy(label), seed=seed)


def planted_task_graph(num_nodes: int, degree: int = DEGREE, seed: int = 0) -> dgl.DGLGraph:
    """A planted partition of ``num_nodes`` nodes in 8 blocks, average degree about ``degree`` (4/5 of the
    edges inside blocks), 16 features (a weak hint of the block), masks 50 / 25 / 25 %: no locality in the
    node ids or the edges (an expander inside each block), unlike the kNN graphs."""
    from geaet_dgl.data.generated.node_graphs import planted_partition

    blocks = NUM_CLASSES
    p_in = 0.8 * degree * blocks / num_nodes
    p_out = 0.2 * degree * blocks / (num_nodes * (blocks - 1))
    return planted_partition(num_nodes, blocks, p_in, p_out, feat_dim=FEAT_DIM, signal=0.5, seed=seed)


#: ``--node-graph`` choices: the graph family of every size.
NODE_GRAPHS = {"knn": node_task_graph, "planted": planted_task_graph}
#: Laplacian eigenpairs of the encoding timed per size (LapPE's usual k).
ENCODING_K = 8


def bench_model_config():
    """Our side's network: GCN + GEANet, width 64, 4 layers, no global self-attention."""
    from geaet_dgl.config import GEANetConfig, ModelConfig

    return ModelConfig(
        node_in_feats=FEAT_DIM, edge_in_feats=1, out_feats=NUM_CLASSES, edge_encoder="constant", pe="none",
        hidden_dim=HIDDEN, num_layers=LAYERS, mpnn="gcn", attention="none", num_heads=HEADS,
        geanet=GEANetConfig(num_heads=HEADS, unit_size=UNITS, scope="graph"), norm="batch", head="node",
        head_layers=2,
    )


def reference_overrides(method: str) -> Dict[str, object]:
    """Config keys that turn the reference's PATTERN config into the same network with ``method``'s attention."""
    return {
        "dataset.node_encoder_name": "LinearNode", "posenc_RWSE.enable": False,
        "gt.layer_type": f"GCN+{REFERENCE_ATTENTION[method]}+GEANet", "gt.layers": LAYERS, "gt.n_heads": HEADS,
        "gt.dim_hidden": HIDDEN, "gnn.dim_inner": HIDDEN, "GEANet.n_heads": HEADS, "GEANet.unit_size": UNITS,
        "GEANet.edge_unit": False, "GEANet.shared_unit": False, "gnn.layers_post_mp": 2,
    }


def dense_attention_mib(num_nodes: int, heads: int = HEADS) -> float:
    """Memory of one layer's dense attention scores and their softmax (float32, kept for backward)."""
    return 2.0 * heads * float(num_nodes) ** 2 * 4 / 2**20


def _reference_runners(graph: dgl.DGLGraph, method: str, ref_dir: str, seed: int):
    """(warm-up, epoch, evaluation) callables of the reference on the whole graph."""
    import copy

    from torch.nn.functional import cross_entropy

    from ..interop.pyg_export import to_pyg_batch
    from ..interop.reference_model import load_reference_model

    graph.edata["feat"] = torch.zeros(graph.num_edges(), 1)
    model = load_reference_model(ref_dir, "pattern", seed, overrides=reference_overrides(method),
                                 dims=(FEAT_DIM, NUM_CLASSES))
    batch = to_pyg_batch(graph, graph.ndata["label"])
    mask = graph.ndata["train_mask"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():  # the reference's layers reassign the batch's fields: each pass gets a shallow copy
        model.train()
        optimizer.zero_grad(set_to_none=True)
        pred, label = model(copy.copy(batch))
        cross_entropy(pred[mask], label[mask]).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    def evaluate():
        model.eval()
        with torch.no_grad():
            return model(copy.copy(batch))[0].argmax(-1)

    return step, step, evaluate


def _ours_runners(graph: dgl.DGLGraph, method: str, seed: int, cache_dir: str):
    """(warm-up, epoch, evaluation) callables of ours: ``method``'s batches, full-graph scoring."""
    from torch.nn.functional import cross_entropy

    from geaet_dgl.data.nodes.node_graph import NodeGraph
    from geaet_dgl.models import build_model
    from geaet_dgl.training.node_batches import make_node_sampler, masked_rows
    from geaet_dgl.training.evaluation import evaluate_node_splits

    data = NodeGraph(graph, "node-classification", NUM_CLASSES, name=f"knn-{graph.num_nodes()}",
                     cache_dir=cache_dir, stamp="node-scaling")
    sampler = make_node_sampler(data, method, num_parts=0)  # cluster: METIS here, parts of ~1,000 nodes
    model = build_model(bench_model_config())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    epochs = [0]

    def train_on(batch):
        optimizer.zero_grad(set_to_none=True)
        rows, labels = masked_rows(batch, model(batch))
        if len(rows):
            cross_entropy(rows, labels).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

    def warm_up():
        model.train()
        train_on(next(iter(sampler.epoch_batches(PARTS_PER_STEP, seed, 0))))

    def epoch():
        model.train()
        for batch in sampler.epoch_batches(PARTS_PER_STEP, seed, epochs[0]):
            train_on(batch)
        epochs[0] += 1

    def evaluate():
        return evaluate_node_splits(model, data, cross_entropy, "accuracy", torch.device("cpu"))

    return warm_up, epoch, evaluate


def _timed(fn) -> tuple:
    """(wall seconds, CPU seconds of this process) of one call of ``fn``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


#: A measurement shorter than this (CPU seconds) is repeated, up to :data:`SHORT_REPEATS` calls in all, and the
#: fastest kept: a small graph's working set sits in the cache other jobs share, so one call of a second or
#: two can take twice its time (measured: 0.87 and 1.54 CPU s for the same 100k-node evaluation, one run apart).
SHORT_CPU_S, SHORT_REPEATS = 10.0, 5


def repeat_while_short(fn, calls: int, short_cpu_s: float = SHORT_CPU_S, most: int = SHORT_REPEATS) -> List[tuple]:
    """``_timed(fn)`` ``calls`` times, then again while every call so far took under ``short_cpu_s`` CPU seconds,
    ``most`` calls at most (never fewer than ``calls``): the list of (wall, CPU) seconds."""
    times = [_timed(fn) for _ in range(calls)]
    while len(times) < most and max(t[1] for t in times) < short_cpu_s:
        times.append(_timed(fn))
    return times


def measure_node_point(method: str, num_nodes: int, threads: int = 1, seed: int = 0, epochs: int = 1,
                       ref_dir: Optional[str] = None, device: str = "cpu", graph_kind: str = "knn"
                       ) -> Dict[str, object]:
    """One method on one graph size: seconds of a training epoch and of a full-graph evaluation, peak RSS.

    After the set-up (cluster: METIS partitions) and one untimed training
    step, ``epochs`` epochs and as many evaluations are timed (an evaluation or a LapPE
    under :data:`SHORT_CPU_S` is repeated, :func:`repeat_while_short`); the fastest of
    each is kept, in wall seconds (``epoch_s``, ``eval_s``) and in CPU seconds
    of the process (``epoch_cpu_s``, ``eval_cpu_s``: with one thread, the
    work itself, whatever else the machine runs). Ours then computes the graph's
    LapPE (:data:`ENCODING_K` eigenpairs, the ``train`` path's solver) in the same
    process: ``encoding_s`` / ``encoding_cpu_s``; the peak RSS covers all of it. ``address_space_limit_mib`` reports the ``RLIMIT_AS`` the
    process ran under (None: unlimited).
    """
    import resource
    import shutil
    import tempfile

    if method not in METHODS:
        raise ValueError(f"method={method!r} is not one of {', '.join(METHODS)}")
    set_threads(threads)
    check_device(device)
    start_rss = current_rss_mib()
    t0 = time.perf_counter()
    if graph_kind not in NODE_GRAPHS:
        raise ValueError(f"graph_kind={graph_kind!r} is not one of {', '.join(NODE_GRAPHS)}")
    graph = NODE_GRAPHS[graph_kind](int(num_nodes), seed=seed)
    build_s = time.perf_counter() - t0
    torch.manual_seed(seed)
    cache_dir = tempfile.mkdtemp(prefix="geaet-node-scaling-")
    try:
        t0 = time.perf_counter()
        if method in REFERENCE_ATTENTION:
            if not ref_dir:
                raise ValueError(f"method {method!r} needs ref_dir (a checkout of the reference)")
            warm_up, epoch, evaluate = _reference_runners(graph, method, ref_dir, seed)
        else:
            warm_up, epoch, evaluate = _ours_runners(graph, method, seed, cache_dir)
        warm_up()
        prepare_s = time.perf_counter() - t0
        epoch_times, eval_times = [], []
        for _ in range(max(1, epochs)):
            epoch_times.append(_timed(epoch))
        eval_times = repeat_while_short(evaluate, max(1, epochs))
        encoding = (None, None)
        if method not in REFERENCE_ATTENTION:
            encoding = min(repeat_while_short(lambda: _lappe(graph), 1), key=lambda t: t[1])
        pass_cpu_s = sparse_pass(graph)
        matvec_cpu_s = sparse_matvec(graph) if method not in REFERENCE_ATTENTION else None
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return {"method": method, "num_nodes": graph.num_nodes(), "num_edges": graph.num_edges(), "threads": threads,
            "build_graph_s": build_s, "prepare_s": prepare_s, "epoch_s": min(t[0] for t in epoch_times),
            "epoch_cpu_s": min(t[1] for t in epoch_times), "eval_s": min(t[0] for t in eval_times),
            "eval_cpu_s": min(t[1] for t in eval_times), "encoding_s": encoding[0], "encoding_cpu_s": encoding[1],
            "sparse_pass_cpu_s": pass_cpu_s, "sparse_matvec_cpu_s": matvec_cpu_s, "graph": graph_kind, "start_rss_mib": start_rss,
            "peak_rss_mib": peak_rss_mib(),
            "allocator": allocator_mode(),
            "address_space_limit_mib": None if limit == resource.RLIM_INFINITY else limit / 2**20}


#: Sparse passes timed per size (the fastest is kept): the machine's cost of one ``copy_u_sum`` at that size.
SPARSE_PASS_REPEATS = 3


def sparse_pass(graph: dgl.DGLGraph, width: int = HIDDEN, repeats: int = SPARSE_PASS_REPEATS,
                seed: int = 0) -> float:
    """CPU seconds of the fastest of ``repeats`` ``copy_u_sum`` passes of ``(N, width)`` random node features
    over ``graph`` (every edge's source row gathered and summed into its destination): the unit in which the
    evaluation's and the encoding's cost is compared across sizes."""
    feat = torch.randn(graph.num_nodes(), width, generator=torch.Generator().manual_seed(seed))
    dgl.ops.copy_u_sum(graph, feat)  # builds the graph's sparse format once, outside the timing
    return min(_timed(lambda: dgl.ops.copy_u_sum(graph, feat))[1] for _ in range(max(1, repeats)))


def sparse_matvec(graph: dgl.DGLGraph, repeats: int = SPARSE_PASS_REPEATS, seed: int = 0) -> float:
    """CPU seconds of the fastest of ``repeats`` products of the graph's symmetric ``(N, N)`` adjacency (scipy
    CSR, float64, as the LapPE solvers hold it) with an ``(N,)`` vector: the unit of the encoding's cost."""
    from geaet_dgl.data.encodings.sparse_encodings import symmetric_adjacency

    src, dst = (t.numpy() for t in graph.edges())
    adj = symmetric_adjacency(src, dst, graph.num_nodes())
    vec = np.random.default_rng(seed).standard_normal(graph.num_nodes())
    return min(_timed(lambda: adj @ vec)[1] for _ in range(max(1, repeats)))


def _lappe(graph: dgl.DGLGraph) -> None:
    from geaet_dgl.data.encodings.positional_encoding import laplacian_pe_from_edges

    src, dst = (t.numpy() for t in graph.edges())
    laplacian_pe_from_edges(src, dst, graph.num_nodes(), ENCODING_K)


def _fit(points: List[Dict[str, object]], key: str, min_nodes: int = 0) -> Optional[float]:
    usable = [p for p in points if p["num_nodes"] >= min_nodes and p.get(key)]
    if len({p["num_nodes"] for p in usable}) < 2:
        return None
    return fit_power_law([p["num_nodes"] for p in usable], [p[key] for p in usable])[0]


def _in_passes(points: List[Dict[str, object]], key: str, unit: str = "sparse_pass_cpu_s"
               ) -> List[Dict[str, object]]:
    """``points`` with ``key`` divided by each point's ``unit`` (None where either is missing)."""
    return [dict(p, **{key: (p[key] / p[unit]) if p.get(key) and p.get(unit) else None}) for p in points]


def _predicted_peak_mib(last: Dict[str, object], num_nodes: int) -> float:
    """Peak RSS at ``num_nodes`` from the last measured size: the interpreter's share fixed, the rest linear."""
    fixed = float(last.get("start_rss_mib", 0.0))
    return fixed + (float(last["peak_rss_mib"]) - fixed) * num_nodes / float(last["num_nodes"])


def run_node_scaling(job: NodeScalingJob, progress: Optional[Callable[[str], None]] = None,
                     timeout_s: Optional[float] = None) -> Dict[str, object]:
    """Every method of ``job`` at every size ``<= job.max_nodes`` and at ``max_nodes``, each in a fresh process
    (``timeout_s`` at most) under ``job.memory_limit_gib``; ``job.timing`` gives threads and seed.

    Returns ``{'sizes', 'degree', 'memory_limit_mib', 'fit', 'methods': {name: {'description', 'points',
    'out_of_memory': {'num_nodes', 'reason'} or None, 'exponent', 'exponent_large', 'eval_exponent_large',
    'eval_exponent', 'encoding_exponent', 'encoding_exponent_large', 'peak_exponent'}}}``; ``job.graph_kind``
    names the graph family (:data:`NODE_GRAPHS`).
    """
    from .worker import WorkerError, run_isolated

    max_nodes, graph_kind, epochs = job.max_nodes, job.graph_kind, job.epochs
    threads, seed = job.timing.resolved().threads, job.timing.seed
    memory_limit_mib = job.memory_limit_gib * 1024
    ref_dir = job.reference.ref_dir if job.reference else None
    ref_python = job.reference.python if job.reference else None
    sizes = job.sizes or DEFAULT_NODE_SIZES
    chosen = sorted({int(s) for s in sizes if int(s) <= max_nodes} | {int(max_nodes)})
    out: Dict[str, object] = {
        "sizes": chosen, "degree": DEGREE, "graph": graph_kind, "memory_limit_mib": memory_limit_mib, "threads": threads,
        "fit": f"least-squares slope of log(epoch CPU seconds) vs log(N); _large: N >= {FIT_MIN_NODES:,}; "
               "wall_: of wall seconds",
        "methods": {},
    }
    for method in job.methods or ("full", "cluster"):
        if method not in METHODS:
            raise ValueError(f"method={method!r} is not one of {', '.join(METHODS)}")
        if method in REFERENCE_ATTENTION and not ref_dir:
            raise ValueError(f"method {method!r} needs the reference's checkout (--against-pyg REF_DIR)")
        points: List[Dict[str, object]] = []
        oom = None
        for n in chosen:
            if method == "ref-transformer" and dense_attention_mib(n) > memory_limit_mib:
                oom = {"num_nodes": n, "reason": f"dense attention scores alone need {dense_attention_mib(n) / 1024:.0f}"
                       f" GiB > the {memory_limit_mib / 1024:.0f} GiB limit (not started)"}
                break
            predicted = _predicted_peak_mib(points[-1], n) if points else 0.0
            if predicted > memory_limit_mib:
                oom = {"num_nodes": n, "reason": f"predicted peak RSS {predicted / 1024:.1f} GiB (the last size's, "
                       f"scaled by the nodes) > the {memory_limit_mib / 1024:.0f} GiB limit (not started)"}
                break
            kwargs = dict(method=method, num_nodes=n, threads=threads, seed=seed, epochs=epochs, ref_dir=ref_dir,
                          graph_kind=graph_kind)
            python = ref_python if method in REFERENCE_ATTENTION else None
            try:
                point = run_isolated("node_scaling", kwargs, timeout=timeout_s, memory_limit_mib=memory_limit_mib,
                                     python=python)
            except WorkerError as exc:
                if not exc.out_of_memory:
                    raise
                last = str(exc).strip().splitlines()[-1].strip()
                oom = {"num_nodes": n, "reason": f"allocation failed under the {memory_limit_mib / 1024:.0f} GiB "
                       f"address-space limit ({last[:160]})"}
                break
            points.append(point)
            if progress:
                progress(f"  {method:16s} N={n:>9,d} E={point['num_edges']:>11,d}: epoch {point['epoch_s']:8.2f} s "
                         f"({point['epoch_cpu_s']:.2f} CPU), eval {point['eval_s']:7.2f} s "
                         f"({point['eval_cpu_s']:.2f} CPU), LapPE {_cpu(point.get('encoding_cpu_s'))} CPU, "
                         f"peak RSS {point['peak_rss_mib'] / 1024:5.2f} GiB")
        if oom and progress:
            progress(f"  {method:16s} N={oom['num_nodes']:>9,d}: out of memory ({oom['reason']})")
        out["methods"][method] = {
            "description": METHODS[method], "points": points, "out_of_memory": oom,
            "exponent": _fit(points, "epoch_cpu_s"), "exponent_large": _fit(points, "epoch_cpu_s", FIT_MIN_NODES),
            "wall_exponent_large": _fit(points, "epoch_s", FIT_MIN_NODES),
            "eval_exponent_large": _fit(points, "eval_cpu_s", FIT_MIN_NODES),
            "eval_exponent": _fit(points, "eval_cpu_s"),
            "encoding_exponent": _fit(points, "encoding_cpu_s"),
            "encoding_exponent_large": _fit(points, "encoding_cpu_s", FIT_MIN_NODES),
            "peak_exponent": _fit(points, "peak_rss_mib"),
            "sparse_pass_exponent_large": _fit(points, "sparse_pass_cpu_s", FIT_MIN_NODES),
            "eval_per_pass_exponent_large": _fit(_in_passes(points, "eval_cpu_s"), "eval_cpu_s", FIT_MIN_NODES),
            "sparse_matvec_exponent_large": _fit(points, "sparse_matvec_cpu_s", FIT_MIN_NODES),
            "encoding_per_pass_exponent_large": _fit(_in_passes(points, "encoding_cpu_s", "sparse_matvec_cpu_s"),
                                                     "encoding_cpu_s", FIT_MIN_NODES),
        }
    return out


def _cpu(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


def _pass_columns(point: Dict[str, object]) -> str:
    """The sparse pass's CPU ms and the evaluation in passes, the sparse matvec's CPU ms and the LapPE in
    matvecs ('-' where not measured)."""
    def unit_and_ratio(unit_key: str, key: str) -> tuple:
        unit, value = point.get(unit_key), point.get(key)
        return ("-" if not unit else f"{unit * 1000:.1f}",
                "-" if not unit or value is None else f"{value / unit:.0f}")

    pass_ms, evals = unit_and_ratio("sparse_pass_cpu_s", "eval_cpu_s")
    matvec_ms, lappe = unit_and_ratio("sparse_matvec_cpu_s", "encoding_cpu_s")
    return f"{pass_ms:>8s} {evals:>9s} {matvec_ms:>9s} {lappe:>12s}"


def format_node_scaling(result: Dict[str, object]) -> str:
    """A plain-text table: one row per (method, size), then the exponents and out-of-memory sizes."""
    lines = [f"node scaling: {result.get('graph', 'knn')} graphs, degree {result['degree']}, {result['threads']} "
             f"thread(s), limit {result['memory_limit_mib'] / 1024:.0f} GiB per run",
             f"{'method':16s} {'nodes':>10s} {'edges':>11s} {'epoch s':>9s} {'CPU s':>9s} {'eval s':>8s} "
             f"{'CPU s':>8s} {'LapPE s':>8s} {'CPU s':>8s} {'peak GiB':>9s} {'pass ms':>8s} {'eval/pass':>9s} "
             f"{'matvec ms':>9s} {'LapPE/matvec':>12s}"]
    for method, entry in result["methods"].items():
        for p in entry["points"]:
            wall = p.get("encoding_s")
            lines.append(f"{method:16s} {p['num_nodes']:>10,d} {p['num_edges']:>11,d} {p['epoch_s']:>9.2f} "
                         f"{p['epoch_cpu_s']:>9.2f} {p['eval_s']:>8.2f} {p['eval_cpu_s']:>8.2f} "
                         f"{'-' if wall is None else f'{wall:.2f}':>8s} {_cpu(p.get('encoding_cpu_s')):>8s} "
                         f"{p['peak_rss_mib'] / 1024:>9.2f} {_pass_columns(p)}")
        if entry["out_of_memory"]:
            lines.append(f"{method:16s} {entry['out_of_memory']['num_nodes']:>10,d} {'out of memory':>31s}")
    for method, entry in result["methods"].items():
        for what, keys in (("epoch", ("exponent", "exponent_large")),
                           ("evaluation", ("eval_exponent", "eval_exponent_large")),
                           ("LapPE", ("encoding_exponent", "encoding_exponent_large"))):
            fits = ", ".join(f"{label} {entry[key]:.2f}" for label, key in
                             zip(("all sizes", f"N >= {FIT_MIN_NODES:,}"), keys) if entry.get(key) is not None)
            lines.append(f"{method}: {what} CPU-time exponent {fits or 'n/a (fewer than 2 sizes)'}")
        if entry.get("peak_exponent") is not None:
            lines.append(f"{method}: peak RSS exponent {entry['peak_exponent']:.2f}")
        per_pass = [(what, entry.get(key)) for what, key in (
            ("one sparse pass", "sparse_pass_exponent_large"),
            ("evaluation in sparse passes", "eval_per_pass_exponent_large"),
            ("one sparse matvec", "sparse_matvec_exponent_large"),
            ("LapPE in sparse matvecs", "encoding_per_pass_exponent_large")) if entry.get(key) is not None]
        if per_pass:
            fits = ", ".join(f"{what} {value:.2f}" for what, value in per_pass)
            lines.append(f"{method}: N >= {FIT_MIN_NODES:,}: {fits} (the machine's per-edge cost divided out: "
                         "0 = linear in the edges)")
    return "\n".join(lines)
