"""Memory and seconds of each stage on products-shaped graphs, through the user's own commands.

For each graph file (written by ``benchmarks/products_shape.py``) this runs, as a new user would:

1. ``geaet-dgl train --dataset FILE --sampler cluster --epochs 1`` (the ``geaet-node`` defaults; the METIS cache
   next to the file is removed first, so METIS runs);
2. ``geaet-dgl eval --checkpoint RUN/best.pt --split test`` (the whole graph);
3. with ``--distributed``: ``geaet-dgl partition FILE --parts 2`` and ``geaet-dgl train --partitions ...
   --nproc 2 --epochs 1`` (2 graph servers + 2 trainers on this machine);
4. with ``--encodings K``: ``train`` again with ``--set model.pe=lappe --set model.pe_k=K`` (LapPE of the whole
   graph before METIS).

Each command runs in its own session under a **memory guard**: the resident memory of the command and every
process it started (summed) is sampled every second and the group is killed when the machine's ``MemAvailable`` falls under
``--guard-gib``. Every output line is stamped with its second, so the stages split by what the commands print
(DGL's "Convert a graph into a bidirected graph" starts METIS, "Metis partitioning" ends it, the epoch line
ends the epoch and its whole-graph scoring). Per stage: seconds and the peak of that summed RSS in its
window (sampled each second: a peak shorter than that can be missed); the distributed run's summary adds each
server's and trainer's own peak (``VmHWM``). Writes ``--out``/scale.json
and prints a table. Run from the repository root::

    python benchmarks/products_scale.py --files /tmp/products/p300k.bin /tmp/products/p600k.bin \\
        --out /tmp/products/scale --distributed --threads 1
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GIB = 2 ** 30


def available_bytes() -> int:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable"):
                return int(line.split()[1]) * 1024
    return 0


def tree_rss(root: int) -> int:
    """Summed VmRSS of process ``root`` and all its descendants (bytes): the command and every process it started,
    the distributed trainers (each in a session of its own) included."""
    parents = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as handle:
                    parents[int(pid)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status") as handle:
                total += sum(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS"))
        except OSError:
            continue
    return total


def guarded(command, log_path: Path, guard_bytes: int, env=None) -> dict:
    """Run ``command`` in a new session; -> rc, wall seconds, stamped lines [(t, text)], RSS samples [(t, bytes)],
    and the second at which the guard killed it (None)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                               cwd=ROOT, env=env)
    lines, samples, killed = [], [], []

    def read() -> None:
        buffer = b""
        for chunk in iter(lambda: process.stdout.read1(65536), b""):
            buffer += chunk
            *complete, buffer = re.split(rb"[\r\n]", buffer)
            now = time.perf_counter() - start
            lines.extend((now, text.decode(errors="replace")) for text in complete if text.strip())
        if buffer.strip():
            lines.append((time.perf_counter() - start, buffer.decode(errors="replace")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while process.poll() is None:
        if available_bytes() < guard_bytes:
            os.killpg(process.pid, signal.SIGKILL)  # the trainers die with the launcher (parent-death signal)
            killed.append(time.perf_counter() - start)
            break
        samples.append((time.perf_counter() - start, tree_rss(process.pid)))
        time.sleep(1.0)
    process.wait()
    reader.join(timeout=10)
    wall = time.perf_counter() - start
    with open(log_path, "w") as handle:
        handle.write("\n".join(f"{t:9.1f} {text}" for t, text in lines) + "\n")
    return {"rc": process.returncode, "wall_s": wall, "lines": lines, "samples": samples,
            "guard_killed_at_s": killed[0] if killed else None}


def first_line(result: dict, pattern: str):
    """(t, match) of the first output line matching ``pattern``, or (None, None)."""
    for t, text in result["lines"]:
        match = re.search(pattern, text)
        if match:
            return t, match
    return None, None


def window_peak(result: dict, lo: float, hi: float) -> float:
    """Largest summed group RSS (GiB) sampled in [lo, hi] (the sample just before lo included)."""
    values = [rss for t, rss in result["samples"] if lo - 1.0 <= t <= hi]
    return max(values, default=0) / GIB


def train_stages(result: dict) -> dict:
    """Seconds and peak GiB of load (start to METIS), METIS and the epoch (training + whole-graph scoring)."""
    t_convert, m_convert = first_line(result, r"Convert a graph into a bidirected graph: ([\d.]+) seconds")
    t_metis, _ = first_line(result, r"Metis partitioning: ([\d.]+) seconds")
    t_epoch, _ = first_line(result, r"epoch 1/\d+: lr")
    t_lappe, _ = first_line(result, r"[Ll]ap[Ll]ace|LapPE|eigen")
    stages = {}
    if t_convert is not None:
        metis_start = t_convert - float(m_convert.group(1))
        stages["load"] = (0.0, metis_start)
        stages["METIS"] = (metis_start, t_metis)
        if t_epoch is not None:
            stages["epoch + whole-graph scoring"] = (t_metis, t_epoch)
    return {name: {"seconds": hi - lo, "peak_gib": window_peak(result, lo, hi)} for name, (lo, hi) in stages.items()
            if hi is not None}


def epoch_split(run: Path) -> dict:
    """The epoch's seconds (metrics.jsonl), of which training (training nodes / the logged nodes per second) and
    the whole-graph scoring (the rest)."""
    metrics, summary = run / "metrics.jsonl", run / "summary.json"
    if not metrics.is_file() or not summary.is_file():
        return {}
    row = json.loads(metrics.read_text().splitlines()[0])
    train_nodes = json.loads(summary.read_text())["num_graphs"]["train"]
    training = train_nodes / row["graphs_per_s"]
    return {"epoch_s": row["seconds"], "training_s": training, "scoring_s": row["seconds"] - training,
            "test_metric": row.get("test_metric")}


def cli(*args: str, threads: int):
    return [sys.executable, "-c", "from cli import console_main; import sys; sys.exit(console_main())", *args,
            "--threads", str(threads)]


def measure_file(path: Path, out: Path, args) -> dict:
    name = path.stem
    guard = int(args.guard_gib * GIB)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_WAIT_POLICY="PASSIVE", PYTHONUNBUFFERED="1")
    record = {"file": str(path), "file_gib": path.stat().st_size / GIB, "runs": {}}
    shutil.rmtree(path.parent / "geaet_cache", ignore_errors=True)
    run = out / f"{name}-train"
    result = guarded(cli("train", "--dataset", str(path), "--sampler", "cluster", "--epochs", "1", "--out", str(run),
                         "--overwrite", "--no-progress", threads=args.threads), out / f"{name}-train.log", guard, env)
    result["stages"] = train_stages(result)
    result["epoch"] = epoch_split(run)
    record["runs"]["train"] = result
    _, size = first_line(result, r"one graph, (\d+) nodes, (\d+) edges")
    record["nodes"], record["edges"] = (int(size.group(1)), int(size.group(2))) if size else (1, 1)
    if result["rc"] == 0 and not args.only_encodings:
        result = guarded(cli("eval", "--checkpoint", str(run / "best.pt"), "--split", "test", threads=args.threads),
                         out / f"{name}-eval.log", guard, env)
        record["runs"]["eval"] = result
    if args.distributed and not args.only_encodings:
        parts = out / f"{name}-parts"
        shutil.rmtree(parts, ignore_errors=True)
        result = guarded(cli("partition", str(path), "--parts", "2", "--out", str(parts), threads=args.threads)[:-2],
                         out / f"{name}-partition.log", guard, env)
        record["runs"]["partition"] = result
        if result["rc"] == 0:
            dist_run = out / f"{name}-dist"
            result = guarded(cli("train", "--partitions", str(parts / f"{name}.json"), "--nproc", "2", "--epochs", "1",
                                 "--out", str(dist_run), "--overwrite", "--no-progress", threads=2),
                             out / f"{name}-dist.log", guard, env)
            summary = dist_run / "summary.json"
            if summary.is_file():
                result["summary"] = json.loads(summary.read_text())
            record["runs"]["dist-train"] = result
    if args.encodings:
        shutil.rmtree(path.parent / "geaet_cache", ignore_errors=True)
        result = guarded(cli("train", "--dataset", str(path), "--sampler", "cluster", "--epochs", "1", "--set",
                             "model.pe=lappe", "--set", f"model.pe_k={args.encodings}", "--out", str(run) + "-lappe",
                             "--overwrite", "--no-progress", threads=args.threads),
                         out / f"{name}-lappe.log", guard, env)
        result["stages"] = train_stages(result)
        t_cached, _ = first_line(result, r"^PE for .* cached")
        load = record["runs"]["train"]["stages"].get("load", {}).get("seconds")
        if t_cached is not None and load is not None:  # the load as in the run without encodings, then LapPE
            result["stages"]["LapPE (load excluded)"] = {"seconds": t_cached - load,
                                                         "peak_gib": window_peak(result, load, t_cached)}
        record["runs"]["train-lappe"] = result
    for result in record["runs"].values():
        result["peak_group_gib"] = max((rss for _, rss in result["samples"]), default=0) / GIB
        del result["lines"]
    return record


def table(records) -> str:
    rows = ["| nodes | edges | command | stage | seconds | peak GiB (group) | bytes/node | bytes/edge |",
            "|---|---|---|---|---|---|---|---|"]
    for record in records:
        n, e = record["nodes"], record["edges"]
        for command, result in record["runs"].items():
            items = list(result.get("stages", {}).items())
            items.append(("whole command", {"seconds": result["wall_s"], "peak_gib": result["peak_group_gib"]}))
            for stage, value in items:
                peak = value["peak_gib"] * GIB
                rows.append(f"| {n:,} | {e:,} | {command} (rc {result['rc']}) | {stage} | {value['seconds']:.1f} | "
                            f"{value['peak_gib']:.2f} | {peak / n:,.0f} | {peak / e:,.1f} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="+", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--distributed", action="store_true", help="also partition in 2 and train 2 trainers")
    parser.add_argument("--encodings", type=int, default=0, help="also train with LapPE of this many eigenvectors")
    parser.add_argument("--only-encodings", action="store_true", help="with --encodings: only that run (and a "
                        "plain train run before it, for the load's seconds)")
    parser.add_argument("--guard-gib", type=float, default=2.5, help="kill a command when MemAvailable falls under")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    records = []
    for path in args.files:
        records.append(measure_file(path.resolve(), args.out, args))
        (args.out / "scale.json").write_text(json.dumps(records, indent=1))
        print(table(records[-1:]), flush=True)


if __name__ == "__main__":
    main()
