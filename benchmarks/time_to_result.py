"""Time to a result on a small graph: ``geaet-dgl train --dataset NAME`` with its defaults against DGL's own GCN
example (``dgl_gcn_example.py``) on the same files, each a whole process, timed in turn on the same machine.

Each repeat runs both commands one after the other (their order alternating), and records the wall time and the
peak resident memory (polled) of each process; the table gives the medians and the ratio of the medians, which is
what a user waits for, start-up, data loading, training, evaluation and the run's files included.

    python benchmarks/time_to_result.py --dataset cora --data-dir ~/.dgl --repeats 3 --out runs/time-cora
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(command, env):
    """(wall seconds, CPU seconds (user + system, the process and its children), peak RSS in MiB, the last output
    line) of ``command``. CPU seconds move less than wall seconds on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watched, peak = psutil.Process(process.pid), 0
    while process.poll() is None:
        try:
            rss = watched.memory_info().rss + sum(c.memory_info().rss for c in watched.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    output = process.stdout.read()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{output[-2000:]}")
    return seconds, cpu, peak / 2**20, output.strip().splitlines()[-1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="cora", choices=["cora", "citeseer", "pubmed"])
    parser.add_argument("--data-dir", required=True, help="DGL's raw_dir holding the set's files")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True, help="folder for the runs and time_to_result.json")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    command = shutil.which("geaet-dgl", path=os.path.dirname(sys.executable)) or None
    ours_base = [command] if command else [sys.executable, os.path.join(ROOT, "cli.py")]
    theirs = [sys.executable, os.path.join(ROOT, "benchmarks", "dgl_gcn_example.py"), "--dataset", args.dataset,
              "--data-dir", args.data_dir]
    env = dict(os.environ)
    rows = {"geaet-dgl train": [], "DGL GCN example": []}
    for repeat in range(args.repeats):
        run_dir = os.path.join(args.out, f"run{repeat}")
        shutil.rmtree(run_dir, ignore_errors=True)
        ours = ours_base + ["train", "--dataset", args.dataset, "--data-dir", args.data_dir, "--out", run_dir,
                            "--no-progress"]
        pair = [("geaet-dgl train", ours), ("DGL GCN example", theirs)]
        for name, cmd in (pair if repeat % 2 == 0 else pair[::-1]):
            seconds, cpu, peak, last = timed(cmd, env)
            rows[name].append({"seconds": seconds, "cpu_seconds": cpu, "peak_mib": peak, "last_line": last})
            print(f"repeat {repeat + 1}: {name}: {seconds:.1f} s wall, {cpu:.1f} s CPU, peak {peak:.0f} MiB | {last}",
                  flush=True)
    median = {name: statistics.median(r["seconds"] for r in runs) for name, runs in rows.items()}
    median_cpu = {name: statistics.median(r["cpu_seconds"] for r in runs) for name, runs in rows.items()}
    ratio = median["geaet-dgl train"] / median["DGL GCN example"]
    cpu_ratio = median_cpu["geaet-dgl train"] / median_cpu["DGL GCN example"]
    print("\n| command | median wall (s) | median CPU (s) | peak RSS (MiB) |\n|---|---|---|---|")
    for name, runs in rows.items():
        print(f"| {name} | {median[name]:.1f} | {median_cpu[name]:.1f} | {max(r['peak_mib'] for r in runs):.0f} |")
    print(f"\nratio (geaet-dgl / DGL example): wall {ratio:.2f}, CPU {cpu_ratio:.2f}")
    with open(os.path.join(args.out, "time_to_result.json"), "w") as handle:
        json.dump({"dataset": args.dataset, "runs": rows, "median_seconds": median, "median_cpu_seconds": median_cpu,
                   "ratio": ratio, "cpu_ratio": cpu_ratio}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
