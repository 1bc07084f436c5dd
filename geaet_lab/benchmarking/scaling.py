"""How GEANet and the GEAET layer scale with graph size, on single random kNN graphs.

Graphs: ``N`` uniform random points in the unit square, each node receiving
edges from its ``k`` nearest neighbours (``k = 8``; built with
``scipy.spatial.cKDTree``, O(N log N), fine for 1M nodes), ``E = k N``.
Components (MNIST widths: hidden 40, 4 heads, 10 slots per head, softmax
scope 'batch' as in the preset):

* ``geanet``: :class:`~geaet_dgl.nn.GEANet` with node AND edge units on, so
  its work covers nodes and edges;
* ``geaet_layer``: :class:`~geaet_dgl.nn.GEAETLayer` with GatedGCN + GEANet +
  FFN and BatchNorm, **without the self-attention branch** (``attention='none'``:
  full attention on one N-node graph is O(N^2) and cannot run at 1M nodes) and
  without the ESLapPE gate;
* ``performer``: the Performer global attention alone
  (:class:`~geaet_dgl.nn.performer.PerformerAttention`, d=40, H=4, heads of width 64,
  266 random features, as the reference builds it): linear in N;
* ``transformer``: the full self-attention alone
  (:class:`~geaet_dgl.nn.GraphSelfAttention`, d=40, H=4): quadratic in N, so its
  memory is predicted quadratically and the large sizes are skipped.

Each size of each component runs in a fresh process (peak RSS per point); a
size whose predicted peak memory (the last point's peak above the bare
interpreter, scaled by N+E) exceeds ``memory_fraction`` of the available
memory is skipped and listed.
The exponent is the least-squares slope of log(time) against log(N+E).
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import dgl
import numpy as np
import torch

from geaet_dgl.allocator import allocator_mode
from .jobs import SCALING_SIZES, ScalingJob, Timing
from .timing import check_device, current_rss_mib, peak_rss_mib, set_threads, summarize, time_call

DEFAULT_SIZES = SCALING_SIZES
#: the components' width (MNIST's)
HIDDEN_DIM = 40
FIT_LARGE_MIN_NODES = 10**4

COMPONENTS = {
    "geanet": "GEANet (node + edge units, H=4, S=10, d=40, scope=batch)",
    "geaet_layer": "GEAET layer, MNIST widths (GatedGCN + GEANet + FFN, BatchNorm), attention='none' "
                   "(full self-attention is O(N^2) on one graph), no ESLapPE gate",
    "performer": "Performer attention alone (d=40, H=4, head width 64, 266 features; the reference's "
                 "performer_pytorch.SelfAttention)",
    "transformer": "full self-attention alone (d=40, H=4), O(N^2)",
}

#: How a component's memory grows with the graph, for skipping sizes that would not fit.
MEMORY_EXPONENT = {"transformer": 2.0}


def knn_edges(points: np.ndarray, k: int, workers: int = 1) -> Tuple[np.ndarray, np.ndarray]:
    """Edges ``neighbour -> node`` from each point's ``k`` nearest other points.

    Every node gets exactly ``k`` IN-edges (``dst == node``), one from each of
    its k nearest neighbours by Euclidean distance, itself excluded (the
    convention of ``dgl.knn_graph``); out-degrees vary.

    Returns ``(src, dst)`` int64 arrays of length ``k * N``, grouped by ``dst``.
    """
    from scipy.spatial import cKDTree

    points = np.asarray(points, dtype=np.float64)
    n = points.shape[0]
    if k < 1 or n <= k:
        raise ValueError(f"need 1 <= k < num_points, got k={k} for {n} points")
    _, idx = cKDTree(points).query(points, k=k + 1, workers=workers)
    is_self = idx == np.arange(n)[:, None]
    no_self = ~is_self.any(axis=1)  # a duplicate point can push a node out of its own list
    is_self[no_self, -1] = True
    src = idx[~is_self].reshape(n, k).ravel().astype(np.int64)
    dst = np.repeat(np.arange(n, dtype=np.int64), k)
    return src, dst


def random_knn_graph(num_nodes: int, k: int = 8, seed: int = 0, workers: int = 1) -> dgl.DGLGraph:
    """A kNN graph (:func:`knn_edges`) of ``num_nodes`` uniform points in [0, 1]^2; ``ndata['pos']`` (N, 2)."""
    points = np.random.default_rng(seed).random((num_nodes, 2))
    src, dst = knn_edges(points, k, workers=workers)
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=num_nodes)
    g.ndata["pos"] = torch.from_numpy(points.astype(np.float32))
    return g


def fit_power_law(sizes: Sequence[float], times: Sequence[float]) -> Tuple[float, float]:
    """Least-squares fit of ``time = c * size**a`` in log space; returns ``(a, c)``."""
    x = np.log(np.asarray(sizes, dtype=np.float64))
    y = np.log(np.asarray(times, dtype=np.float64))
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError("fitting an exponent needs at least two distinct sizes")
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(math.exp(intercept))


def build_component(component: str, hidden_dim: int = HIDDEN_DIM, num_heads: int = 4, unit_size: int = 10
                    ) -> Tuple[torch.nn.Module, Callable]:
    """The module and ``call(module, graph, x, e) -> tuple of outputs``."""
    from geaet_dgl.nn import GEAETLayer, GEANet, build_mpnn

    if component == "geanet":
        module = GEANet(hidden_dim, num_heads, unit_size, node_unit=True, edge_unit=True, scope="batch")
        return module, lambda m, g, x, e: m(g, x, e)
    if component == "performer":
        from geaet_dgl.nn.performer import PerformerAttention

        return PerformerAttention(hidden_dim, num_heads), lambda m, g, x, e: m(g, x, e)
    if component == "transformer":
        from geaet_dgl.nn import GraphSelfAttention

        return GraphSelfAttention(hidden_dim, num_heads), lambda m, g, x, e: m(g, x, e)
    if component == "geaet_layer":
        mpnn = build_mpnn("gatedgcn", hidden_dim)
        geanet = GEANet(hidden_dim, num_heads, unit_size, scope="batch")
        module = GEAETLayer(hidden_dim, mpnn, None, geanet, norm="batch")
        return module, lambda m, g, x, e: m(g, x, e)
    raise ValueError(f"component={component!r} is not one of {', '.join(COMPONENTS)}")


def _output_sum(outputs) -> torch.Tensor:
    return sum(t.sum() for t in outputs if isinstance(t, torch.Tensor) and t.requires_grad)


def measure_scaling_point(component: str = "geanet", num_nodes: int = 1000, job: Optional[ScalingJob] = None,
                          timing: Optional[Timing] = None) -> Dict[str, object]:
    """Forward (eval, no_grad) and forward+backward (train, sum of outputs) time on one kNN graph.

    ``job`` (default :class:`~.jobs.ScalingJob`'s) gives the graph's ``k`` and the sampling: each phase
    runs ``warmup`` untimed calls, then at least ``repeats`` timed ones, and keeps going (up to
    ``max_repeats``) until ``min_time_s`` seconds have been timed, so the cheap small graphs get robust
    medians; forward+backward when ``backward``. ``timing`` gives ``threads``, ``device`` and ``seed``.
    The component has MNIST widths (:func:`build_component`'s defaults).
    """
    import time

    job = job or ScalingJob()
    timing = (timing or Timing()).resolved()
    threads, seed = timing.threads, timing.seed
    set_threads(threads)
    dev = check_device(timing.device)
    start_rss = current_rss_mib()
    t0 = time.perf_counter()
    graph = random_knn_graph(int(num_nodes), job.k, seed=seed, workers=threads)
    build_s = time.perf_counter() - t0
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(graph.num_nodes(), HIDDEN_DIM, generator=gen).to(dev)
    e = torch.randn(graph.num_edges(), HIDDEN_DIM, generator=gen).to(dev)
    graph = graph.to(dev)
    torch.manual_seed(seed)
    module, call = build_component(component)
    module = module.to(dev)
    base_rss = current_rss_mib()

    def forward():
        with torch.no_grad():
            call(module, graph, x, e)

    def forward_backward():
        module.zero_grad(set_to_none=True)
        _output_sum(call(module, graph, x, e)).backward()

    def sample(fn) -> List[float]:
        for _ in range(job.warmup):
            time_call(fn, dev)
        times: List[float] = []
        while len(times) < job.repeats or (sum(times) < job.min_time_s and len(times) < job.max_repeats):
            times.append(time_call(fn, dev))
        return times

    module.eval()
    fwd = sample(forward)
    result: Dict[str, object] = {
        "component": component,
        "num_nodes": graph.num_nodes(),
        "num_edges": graph.num_edges(),
        "size": graph.num_nodes() + graph.num_edges(),
        "build_graph_s": build_s,
        "forward_s": summarize(fwd)["median"],
        "forward_s_min": summarize(fwd)["min"],
        "forward_s_max": summarize(fwd)["max"],
        "forward_repeats": len(fwd),
    }
    if job.backward:
        module.train()
        fb = sample(forward_backward)
        result.update(forward_backward_s=summarize(fb)["median"], forward_backward_s_min=summarize(fb)["min"],
                      forward_backward_s_max=summarize(fb)["max"], forward_backward_repeats=len(fb))
    result.update(start_rss_mib=start_rss, base_rss_mib=base_rss, peak_rss_mib=peak_rss_mib(),
                  allocator=allocator_mode())
    if dev.type == "cuda":
        result["peak_gpu_mib"] = torch.cuda.max_memory_allocated(dev) / 2**20
    return result


def _fits(points: List[Dict[str, object]], key: str) -> Dict[str, Optional[float]]:
    """Exponents of the median times (``exponent_<key>``) and of the minimum times (``..._from_min``: on a
    shared machine noise only adds time, so the minimum is the steadier estimate), over all sizes and over
    sizes >= 1e4 (``..._large``)."""
    out: Dict[str, Optional[float]] = {}
    usable = [p for p in points if p.get(f"{key}_s")]
    for suffix, subset in (("", usable), ("_large", [p for p in usable if p["num_nodes"] >= FIT_LARGE_MIN_NODES])):
        for stat, field in (("", f"{key}_s"), ("_from_min", f"{key}_s_min")):
            name = f"exponent_{key}{stat}{suffix}"
            out[name] = (fit_power_law([p["size"] for p in subset], [p[field] for p in subset])[0]
                         if len(subset) >= 2 else None)
    return out


def _memory_fit(points: List[Dict[str, object]]) -> Dict[str, Optional[float]]:
    """Exponent of the peak memory above the bare interpreter (``peak_rss_mib - start_rss_mib``) in N+E,
    over all sizes and over sizes >= 1e4 (``_large``)."""
    out: Dict[str, Optional[float]] = {}
    usable = [p for p in points if "peak_rss_mib" in p and p["peak_rss_mib"] > p.get("start_rss_mib", 0.0)]
    for suffix, subset in (("", usable), ("_large", [p for p in usable if p["num_nodes"] >= FIT_LARGE_MIN_NODES])):
        out[f"exponent_peak_memory{suffix}"] = (
            fit_power_law([p["size"] for p in subset], [p["peak_rss_mib"] - p.get("start_rss_mib", 0.0)
                                                        for p in subset])[0] if len(subset) >= 2 else None)
    return out


def _available_mib() -> float:
    import psutil

    return psutil.virtual_memory().available / 2**20


def run_scaling(job: ScalingJob, timing: Timing, progress: Optional[Callable[[str], None]] = None
                ) -> Dict[str, object]:
    """Time every component of ``job`` at every size ``<= job.max_nodes``, each in a fresh process when
    ``timing.isolate``; fit the exponents.

    Returns ``{'k', 'sizes', 'repeats', 'min_time_s', 'fit', 'note', 'components':
    {name: {'description', 'points': [one dict per size], 'skipped': [{'num_nodes',
    'reason'}], 'exponent_forward', 'exponent_forward_backward'}}}`` (exponents of
    the median times over all sizes), plus ``exponent_*_from_min`` (of the minimum
    times) and ``exponent_*_large`` (sizes >= 1e4 only).
    """
    from .worker import WorkerError, run_isolated

    check_device(timing.device)
    k, max_nodes = job.k, job.max_nodes
    chosen = sorted({int(s) for s in job.sizes if int(s) <= max_nodes})
    if not chosen:
        raise ValueError(f"no size <= max_nodes={max_nodes} among {list(job.sizes)}")
    out: Dict[str, object] = {
        "k": k, "sizes": chosen, "repeats": job.repeats, "min_time_s": job.min_time_s,
        "fit": "least-squares slope of log(time) vs log(N+E)",
        "note": "geaet_layer runs with attention='none': full self-attention on one N-node graph is O(N^2)",
        "components": {},
    }
    for component in job.components:
        if component not in COMPONENTS:
            raise ValueError(f"component={component!r} is not one of {', '.join(COMPONENTS)}")
        points: List[Dict[str, object]] = []
        skipped: List[Dict[str, object]] = []
        for n in chosen:
            if timing.isolate and points and "peak_rss_mib" in points[-1]:
                last = points[-1]
                growth = ((n + k * n) / float(last["size"])) ** MEMORY_EXPONENT.get(component, 1.0)
                fixed = last.get("start_rss_mib", 0.0)  # interpreter + libraries, independent of the size
                predicted = fixed + (last["peak_rss_mib"] - fixed) * growth
                budget = job.memory_fraction * _available_mib()
                if predicted > budget:
                    skipped.append({"num_nodes": n, "reason": f"predicted peak {predicted / 1024:.1f} GiB > "
                                    f"{job.memory_fraction:.0%} of available memory ({budget / 1024:.1f} GiB)"})
                    continue
            kwargs = dict(component=component, num_nodes=n, job=job, timing=timing)
            try:
                point = run_isolated("scaling", kwargs) if timing.isolate else measure_scaling_point(**kwargs)
            except WorkerError as exc:
                skipped.append({"num_nodes": n, "reason": str(exc).splitlines()[0]})
                continue
            points.append(point)
            if progress:
                fb = f", fwd+bwd {point['forward_backward_s']:.4f} s" if "forward_backward_s" in point else ""
                progress(f"  {component:12s} N={n:>8d} E={point['num_edges']:>9d}: fwd {point['forward_s']:.4f} s"
                         f"{fb}, peak RSS {point['peak_rss_mib']:.0f} MiB")
        entry: Dict[str, object] = {"description": COMPONENTS[component], "points": points, "skipped": skipped}
        entry.update(_fits(points, "forward"))
        entry.update(_memory_fit(points))
        if job.backward:
            entry.update(_fits(points, "forward_backward"))
        out["components"][component] = entry
    return out
