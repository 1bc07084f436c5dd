"""``geaet-dgl train --partitions DIR/NAME.json``: graph servers + trainers on one machine, then full-graph scores.

On one machine ``nproc`` trainers (a multiple of the partitions) and one graph
server per partition run as separate processes (:mod:`.processes`), each
partition as a simulated machine of DGL's (see :mod:`.engine`). The run
directory gets the usual files (rank 0 writes them), the processes' logs in
``dist-logs/``, and, once training ends, ``summary.json`` gains the val and
test metric of ``best.pt`` scored on the whole graph file in one pass
(``full_graph_val_metric`` / ``full_graph_test_metric``).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from typing import Any, Dict

import torch


from ..config import ConfigError
from ..models.geaet import build_model
from ..training import run_dir as files
from ..training.checkpoint import load_checkpoint
from ..training.distributed import free_port
from ..training.losses import get_loss
from ..training.node_task import evaluate_node_splits
from ..training.run_config import RunConfig, data_pe_sizes, make_run_config
from . import engine
from .partition import check_matches_graph, load_single_graph, read_sidecar
from .processes import LocalJob, run_job
from .worker import JOB_ENV

LOG_DIR = "dist-logs"


def partitioned_run_config(partitions: str, preset: str = None, overrides: Dict[str, Any] = None,
                           threads: int = None) -> RunConfig:
    """The run configuration for the graph a partition folder was cut from (widths, head, loss from the file)."""
    sidecar = read_sidecar(partitions)
    run = make_run_config(sidecar["graph_file"]["path"], preset, overrides, threads=threads)
    check_encodings(run, sidecar)
    return run


def check_encodings(run: RunConfig, sidecar: dict) -> None:
    """The model's positional encoding must be one the partitions carry."""
    pe, k = run.model.pe, run.model.pe_k
    have = {"eslappe": sidecar["lap_k"], "lappe": sidecar["lap_k"], "rwse": sidecar["rwse_k"]}
    if pe in have and have[pe] != k:
        flag = "--rwse-k" if pe == "rwse" else "--lap-k"
        raise ConfigError(f"model.pe={pe} reads {k} values per node but the partitions carry {have[pe]}; "
                          f"partition again with {flag} {k}, or train with --set model.pe=none")


def train_partitioned(run: RunConfig, run_dir: str, partitions: str, nproc: int, *, resume: bool = False,
                      overwrite: bool = False) -> Dict[str, Any]:
    """Train ``run`` on the partitions with ``nproc`` local trainers; the summary (see the module docstring)."""
    parts = engine.read_partitions(partitions)
    sidecar = read_sidecar(partitions)
    check_matches_graph(partitions, sidecar, parts.num_nodes, parts.num_edges)
    if nproc % parts.num_parts:
        raise ConfigError(f"--nproc {nproc} trainers cannot share {parts.num_parts} partitions evenly; pass a "
                          f"multiple of {parts.num_parts}")
    if resume:
        saved = load_checkpoint(os.path.join(run_dir, files.LAST)).get("ranks", {}).get("world_size", 1)
        if saved != nproc:
            raise ConfigError(f"this run was trained by {saved} trainers; resume it with --nproc {saved}")
    else:
        files.prepare_new_run_dir(run_dir, overwrite)
    run.world_size = nproc
    job_dir = tempfile.mkdtemp(prefix="geaet-dgl-job-")
    token = f"gd{secrets.token_hex(4)}"
    try:
        job = LocalJob(os.path.join(run_dir, LOG_DIR), token)
        errors_dir = os.path.join(job_dir, "errors")
        os.makedirs(errors_dir)
        ip_config = os.path.join(job_dir, "ip_config.txt")
        engine.write_ip_config(ip_config, [("127.0.0.1", free_port()) for _ in range(parts.num_parts)])
        confs = engine.machine_configs(parts, token, job_dir)
        spec = {"run": run.to_dict(), "run_dir": os.path.abspath(run_dir), "resume": resume, "ip_config": ip_config,
                "master": ["127.0.0.1", free_port()], "num_trainers": nproc, "errors_dir": errors_dir,
                "graph_names": [engine.machine_graph_name(parts.graph_name, token, k) for k in range(parts.num_parts)]}
        spec_path = os.path.join(job_dir, "job.json")
        with open(spec_path, "w") as handle:
            json.dump(spec, handle)
        threads = str(max(1, (run.threads or 1) // nproc))

        def start(job: LocalJob) -> None:
            for k in range(parts.num_parts):
                env = engine.server_env(k, ip_config, confs[k], nproc)
                job.start(f"server-{k}", dict(env, **{engine.MACHINE_ENV: str(k), engine.SHM_ENV: token,
                                                      JOB_ENV: spec_path}), server=True)
            for i in range(nproc):
                k = i // (nproc // parts.num_parts)
                env = engine.trainer_env(ip_config, confs[k], nproc)
                job.start(f"trainer-{i}", dict(env, **{engine.MACHINE_ENV: str(k), engine.SHM_ENV: token,
                                                       JOB_ENV: spec_path, "OMP_NUM_THREADS": threads}),
                          server=False)

        run_job(job, errors_dir, start)
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)
    return score_best_on_graph(run_dir, sidecar["graph_file"]["path"])


def score_on_graph(checkpoint: str, graph_file: str) -> Dict[str, float]:
    """``{split: metric}`` of a checkpoint's model on the whole graph, val and test.

    Scored as ``geaet-dgl eval`` scores a node task: one full-graph pass
    (layer-wise when it does not fit), every node with its whole graph as context.
    """
    state = load_checkpoint(checkpoint)
    run = RunConfig.from_dict(state["run_config"])
    model = build_model(run.model)
    model.load_state_dict(state["model"])
    lap_k, rwse_k = data_pe_sizes(run.model)
    data = load_single_graph(graph_file, lap_k, rwse_k or 0)
    scores = evaluate_node_splits(model, data, get_loss(run.train.loss), run.train.metric, torch.device("cpu"))
    return {split: result["metric"] for split, result in scores.items()}


def score_best_on_graph(run_dir: str, graph_file: str) -> Dict[str, Any]:
    """Add ``best.pt``'s whole-graph val and test metrics (:func:`score_on_graph`) to ``summary.json``."""
    scores = score_on_graph(os.path.join(run_dir, files.BEST), graph_file)
    summary_path = os.path.join(run_dir, files.SUMMARY)
    with open(summary_path) as handle:
        summary = json.load(handle)
    summary.update({f"full_graph_{split}_metric": value for split, value in scores.items()})
    files.write_json(summary_path, summary)
    return summary
