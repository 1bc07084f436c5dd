"""LapPE's k smallest Laplacian eigenpairs on large sparse graphs: each solver's CPU time, peak memory and agreement.

For every graph family and size, each solver of ``sparse_laplacian_eig`` runs in a fresh process (its own
peak RSS), one thread, on the same graph:

* ``arpack``: Lanczos (ARPACK's ``eigsh``), the solver before multigrid;
* ``auto``: what ``train`` uses, LOBPCG preconditioned by algebraic multigrid (pyamg) where multigrid is
  cheap on the graph, else ARPACK (the ``route`` column says which ran);
* ``lobpcg``: LOBPCG with multigrid forced, also where the test would refuse it.

Graphs: ``knn`` (10-NN graphs of random points in the unit square: mesh-like, small eigenvalues crowded
together) and ``planted`` (planted partitions, 8 blocks, average degree 10: expanders). The eigenvalues
of every solver are compared with the first solver's on the same graph (``max |dlambda|``); the fitted
exponent is the least-squares slope of log(CPU seconds) against log(N) per (graph, solver). A run past
``--timeout`` seconds is reported as such and the solver's larger sizes are skipped.

    python benchmarks/lappe_solvers.py --graph knn --sizes 100000 300000 1000000 --solvers auto arpack --threads 1
"""
import argparse
import json
import resource
import subprocess
import sys
import time

import _common  # noqa: F401

ROUTES = {"arpack": "ARPACK", "lobpcg": "LOBPCG + multigrid"}


def measure(graph_kind: str, num_nodes: int, solver: str, k: int, threads: int) -> dict:
    import numpy as np
    import torch

    from geaet_lab.benchmarking.node_scaling import NODE_GRAPHS
    from geaet_dgl.data.encodings import sparse_encodings as se

    torch.set_num_threads(threads)
    graph = NODE_GRAPHS[graph_kind](num_nodes)
    src, dst = (t.numpy() for t in graph.edges())
    del graph
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    used = {"route": "arpack"}
    lobpcg = se.lobpcg_smallest

    def recording(*args, **kwargs):  # which route 'auto' took: LOBPCG returned pairs, or None (ARPACK follows)
        found = lobpcg(*args, **kwargs)
        used["route"] = "lobpcg" if found is not None else "arpack"
        return found

    se.lobpcg_smallest = recording
    wall, cpu = time.perf_counter(), time.process_time()
    vals, vecs = se.sparse_laplacian_eig(src, dst, num_nodes, k, "sym", solver=solver)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    adj = se.symmetric_adjacency(src, dst, num_nodes)
    lap = se.laplacian_csr(adj, np.asarray(adj.sum(axis=1)).ravel(), "sym")
    residual = float(np.linalg.norm(lap @ vecs - vecs * vals, axis=0).max())  # ||L v - lambda v||, unit v
    return {"graph": graph_kind, "nodes": num_nodes, "edges": int(len(src)), "solver": solver, "k": k,
            "route": ROUTES[used["route"]], "cpu_s": cpu, "wall_s": wall, "eigenvalues": [float(v) for v in vals],
            "residual": residual, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_before_mib": base, "threads": threads}


def fit_exponent(rows: list) -> float:
    import numpy as np

    x = np.log([r["nodes"] for r in rows])
    y = np.log([r["cpu_s"] for r in rows])
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", choices=("knn", "planted"), nargs="+", default=["knn", "planted"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--solvers", choices=("auto", "arpack", "lobpcg"), nargs="+", default=["auto", "arpack"])
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run before it is given up")
    parser.add_argument("--json", help="write every row and the fits here")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        graph_kind, num_nodes, solver = args.one
        print(json.dumps(measure(graph_kind, int(num_nodes), solver, args.k, args.threads)))
        return
    rows, fits = [], {}
    for graph_kind in args.graph:
        given_up = set()
        for n in args.sizes:
            first = None
            for solver in args.solvers:
                if solver in given_up:
                    continue
                command = [sys.executable, __file__, "--one", graph_kind, str(n), solver, "--k", str(args.k),
                           "--threads", str(args.threads)]
                try:
                    out = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    print(f"{graph_kind:8s} N={n:>10,d} {solver:7s} gave up after {args.timeout:.0f} s", flush=True)
                    given_up.add(solver)
                    continue
                if out.returncode:
                    print(f"{graph_kind:8s} N={n:>10,d} {solver:7s} failed: {out.stderr.strip().splitlines()[-1]}",
                          flush=True)
                    given_up.add(solver)
                    continue
                row = json.loads(out.stdout.strip().splitlines()[-1])
                first = first or row
                row["max_eigenvalue_diff"] = max(abs(a - b) for a, b in zip(row["eigenvalues"], first["eigenvalues"]))
                rows.append(row)
                print(f"{graph_kind:8s} N={n:>10,d} E={row['edges']:>11,d} {solver:7s} ({row['route']:18s}) "
                      f"{row['cpu_s']:9.2f} CPU s ({row['wall_s']:.1f} wall), peak RSS {row['peak_rss_mib'] / 1024:5.2f}"
                      f" GiB, residual {row['residual']:.1e}, max |dlambda| vs {first['solver']} "
                      f"{row['max_eigenvalue_diff']:.1e}", flush=True)
        for solver in args.solvers:
            mine = [r for r in rows if r["graph"] == graph_kind and r["solver"] == solver]
            if len({r["nodes"] for r in mine}) >= 2:
                fits[f"{graph_kind}/{solver}"] = fit_exponent(mine)
                sizes = ", ".join(f"{r['nodes']:,}" for r in mine)
                print(f"{graph_kind} {solver}: CPU-time exponent {fits[graph_kind + '/' + solver]:.2f} over {sizes} "
                      "nodes", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": rows, "exponents": fits}, handle, indent=1)


if __name__ == "__main__":
    main()
