"""RWSE on planted-partition graphs whose walks cover the graph: the column-chunk route's time and peak memory.

Each size runs in a fresh process (its own peak RSS). The row-block route of
``sparse_random_walk_se`` is measured beside it where its work estimate stays under
``RWSE_MAX_WORK`` (it is not run where the walks' neighbourhoods fill the graph). With
``--chunks N`` only the first N column chunks run and the whole is extrapolated
(chunks are alike: every one does the same products over the whole edge set).

    python benchmarks/rwse_large.py --sizes 10000 30000 100000 --k 16 --chunks 2 --threads 1
"""
import argparse
import json
import resource
import subprocess
import sys
import time

import _common  # noqa: F401


def measure(num_nodes: int, k: int, chunks: int, threads: int, degree: int) -> dict:
    import torch

    from geaet_lab.benchmarking.node_scaling import planted_task_graph
    from geaet_dgl.data.encodings import sparse_encodings as se

    torch.set_num_threads(threads)
    graph = planted_task_graph(num_nodes, degree=degree)
    src, dst = (t.numpy() for t in graph.edges())
    del graph
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    step = se.walk_matrix(src, dst, num_nodes)
    work = se._rwse_work_estimate(step, k)
    chunk = max(1, min(num_nodes, se.RWSE_CHUNK_BYTES // (3 * 4 * num_nodes)))
    total_chunks = -(-num_nodes // chunk)
    run_nodes = num_nodes if not chunks else min(num_nodes, chunks * chunk)
    row_seconds = None
    if work <= se.RWSE_MAX_WORK:  # the row-block route runs here: time it too
        start = time.perf_counter()
        se.sparse_random_walk_se(src, dst, num_nodes, k)
        row_seconds = time.perf_counter() - start
    start = time.perf_counter()
    if run_nodes == num_nodes:
        se.column_chunk_random_walk_se(src, dst, num_nodes, k)
    else:  # the first `chunks` chunks: the same products, on the first run_nodes columns
        _first_chunks(se, src, dst, num_nodes, k, chunk, run_nodes)
    seconds = time.perf_counter() - start
    return {"nodes": num_nodes, "edges": int(len(src)), "k": k, "row_block_work": work,
            "row_block_refused_before": work > se.RWSE_MAX_WORK,
            "row_block_seconds": row_seconds, "chunk_columns": chunk, "chunks": total_chunks,
            "chunks_run": -(-run_nodes // chunk), "seconds_run": seconds,
            "seconds_total": seconds * total_chunks / -(-run_nodes // chunk),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rss_before_mib": base,
            "threads": threads}


def _first_chunks(se, src, dst, num_nodes, k, chunk, run_nodes):
    """``column_chunk_random_walk_se``'s loop over the first chunks only (same operator, same blocks; the planted
    partitions are symmetric, so its symmetric route)."""
    import numpy as np
    import scipy.sparse as sp
    import torch

    adj = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(num_nodes, num_nodes))
    adj.sum_duplicates()
    deg = np.asarray(adj.sum(axis=1)).ravel()
    half = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    operator = se._torch_csr(sp.diags(half) @ adj @ sp.diags(half))
    for start in range(0, run_nodes, chunk):
        stop = min(num_nodes, start + chunk)
        current = torch.zeros(num_nodes, stop - start)
        current[torch.arange(start, stop), torch.arange(stop - start)] = 1.0
        for _ in range((k + 1) // 2):
            following = operator @ current
            (current * following).sum(0)
            current = following


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--degree", type=int, default=10)
    parser.add_argument("--chunks", type=int, default=0, help="run only this many column chunks and extrapolate")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.k, args.chunks, args.threads, args.degree)))
        return
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--k", str(args.k), "--chunks",
                              str(args.chunks), "--threads", str(args.threads), "--degree", str(args.degree)],
                             capture_output=True, text=True)
        print(out.stdout.strip() or out.stderr.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
