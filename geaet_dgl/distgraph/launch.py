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

import contextlib
import json
import logging
import os
import secrets
import shutil
import tempfile
from typing import Any, Dict, Mapping, Optional, Tuple

import torch


from ..config import ConfigError, OptionConflict
from ..inference.layerwise import available_bytes
from ..models import build_model
from ..training import run_dir as files
from ..training.checkpoint import load_checkpoint
from ..training.distributed import free_port
from ..training.environment import check_environment
from ..training.losses import get_loss
from ..training.run_lock import claim_run_dir
from ..training.evaluation import evaluate_node_splits
from ..config import RunConfig
from ..training.new_run import NODE_GRAPH_PRESET, make_run_config
from ..data.identity import file_identity
from ..data.own_files.graph_files import GraphFileInfo
from ..data.run_splits import data_pe_sizes
from . import engine
from .partition import check_matches_graph, file_stamp, graph_info, load_single_graph, read_sidecar
from .processes import JobStopped, LocalJob, run_job
from .worker import JOB_ENV

log = logging.getLogger(__name__)

LOG_DIR = "dist-logs"
#: In the run directory of a run on partitions: where they are and how many trainers (read by --resume).
RUN_MARKER = "partitions.json"


#: The options of ``train`` that name or split the data: a run on partitions takes its data from them.
DATA_OPTIONS = ("--dataset", "--config", "--data-file", "--seeds", "--sampler", "--task", "--split", "--split-file")
#: The ``--set data.*`` settings a run on partitions reads (its trainers' METIS parts and how they score).
PARTITIONED_DATA_SETTINGS = ("data.num_parts", "data.dist_scoring")


def check_partition_options(partitions: Optional[str], ip_config: Optional[str], machine: Optional[int],
                            given: Optional[Mapping[str, Any]] = None, settings: Any = ()) -> None:
    """Refuse option combinations ``train --partitions`` cannot take (:class:`OptionConflict`).

    The task, split and batches of a run on partitions are fixed when the graph is partitioned (its node
    masks, the task recorded in the folder; random node batches of ``--batch-size`` nodes per trainer), so
    the :data:`DATA_OPTIONS` in ``given`` (``{"--task": value, ...}``, a value that is None or empty: not
    given) and ``--set data.*`` among ``settings`` would be dropped, apart from
    :data:`PARTITIONED_DATA_SETTINGS`.
    """
    given = dict(given or {})
    if partitions is None:
        if ip_config is not None or machine is not None:
            raise OptionConflict("--ip-config and --machine go with --partitions DIR/NAME.json")
        return
    data_settings = sorted(f"--set {key}" for key in settings
                           if str(key).startswith("data.") and key not in PARTITIONED_DATA_SETTINGS)
    clash = [flag for flag in DATA_OPTIONS if given.get(flag)] + data_settings
    if clash:
        raise OptionConflict(f"--partitions trains on the graph the partitions were cut from, with its node masks "
                             f"and the task recorded when it was partitioned; drop {', '.join(clash)}")
    if (ip_config is None) != (machine is None):
        raise OptionConflict("--ip-config and --machine go together: each machine runs the command with its own "
                             "line of ip.txt")


def default_nproc(partitions: str, ip_config: Optional[str]) -> int:
    """Trainers when ``--nproc`` is left out: one per partition on one machine, one per machine with ``ip_config``."""
    return 1 if ip_config is not None else engine.read_partitions(partitions).num_parts


def partitioned_run(run_dir: str) -> Optional[Dict[str, Any]]:
    """The :data:`RUN_MARKER` of a run on partitions (None for any other run directory)."""
    path = os.path.join(run_dir, RUN_MARKER)
    if not os.path.isfile(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def resume_partitioned(run_dir: str) -> Optional[Dict[str, Any]]:
    """Continue a run on partitions after its last finished epoch, with the trainers that started it."""
    marker = partitioned_run(run_dir)
    if not os.path.isfile(os.path.join(run_dir, files.LAST)) and marker.get("machine", 0) == 0:
        raise files.no_checkpoint_to_resume(run_dir)  # on trainer 0's machine, before any process starts
    with open(os.path.join(run_dir, files.CONFIG_JSON)) as handle:
        run = check_environment(RunConfig.from_dict(json.load(handle)))
    return train_partitioned(run, run_dir, marker["partitions"], marker["nproc"], resume=True,
                             ip_config=marker["ip_config"], machine=marker["machine"])


def partitioned_run_config(partitions: str, preset: Optional[str] = None,
                           overrides: Optional[Dict[str, Any]] = None, threads: Optional[int] = None,
                           checkpoint_every: int = 0) -> RunConfig:
    """The run configuration for the graph a partition folder was cut from (widths, head, loss from the file).

    ``data.sampler`` is ``cluster`` (what the trainers do: METIS parts, ``train.batch_size`` per step), so
    ``eval`` and ``predict`` on the run's checkpoints read the graph file as a node task.
    """
    sidecar = read_sidecar(partitions)
    overrides = {"data.sampler": "cluster", **(overrides or {})}
    run = make_run_config(sidecar["graph_file"]["path"], preset or NODE_GRAPH_PRESET, overrides,
                          recorded=recorded_graph_file(sidecar), threads=threads, checkpoint_every=checkpoint_every)
    check_encodings(run, sidecar)
    return run


def recorded_graph_file(sidecar: Dict[str, Any]) -> Optional[Tuple[GraphFileInfo, Dict[str, Any]]]:
    """(what the graph file holds, its identity) as ``geaet-dgl partition`` recorded them in the sidecar, while the
    file has the size and mtime recorded with them; else None (the file is read, and :func:`train_partitioned`
    checks it against the partitions).

    The launcher configures the run from these instead of loading the graph (on ogbn-products' size that took
    30 s and 5 GiB before any process started); a folder that predates content hashes hashes the file once."""
    stamp = sidecar["graph_file"]
    current = file_stamp(stamp["path"]) if os.path.isfile(stamp["path"]) else None
    if current is None or (current["size"], current["mtime_ns"]) != (stamp["size"], stamp["mtime_ns"]):
        return None
    info = graph_info(sidecar)
    if stamp.get("sha256"):
        identity = {"size": stamp["size"], "graphs": 1, "sha256": stamp["sha256"]}
    else:
        identity = file_identity(stamp["path"], 1)
    return info, identity


def check_encodings(run: RunConfig, sidecar: dict) -> None:
    """The model's positional encoding must be one the partitions carry."""
    pe, k = run.model.pe, run.model.pe_k
    have = {"eslappe": sidecar["lap_k"], "lappe": sidecar["lap_k"], "rwse": sidecar["rwse_k"]}
    if pe in have and have[pe] != k:
        flag = "--rwse-k" if pe == "rwse" else "--lap-k"
        raise ConfigError(f"model.pe={pe} reads {k} values per node but the partitions carry {have[pe]}; "
                          f"partition again with {flag} {k}, or train with --set model.pe=none")


def train_partitioned(run: RunConfig, run_dir: str, partitions: str, nproc: int, *, resume: bool = False,
                      overwrite: bool = False, ip_config: Optional[str] = None, machine: int = 0) -> Optional[Dict[str, Any]]:
    """Train ``run`` on the partitions; rank 0's machine returns the summary (see the module docstring).

    Without ``ip_config``: every partition on this machine, ``nproc`` trainers
    in all. With ``ip_config`` (one ``IP [PORT]`` line per machine, as many
    as partitions): this is machine ``machine``; it starts the server of
    partition ``machine`` and ``nproc`` trainers, and every machine runs the
    same command with its own ``machine``. The torch.distributed rendezvous
    is on the first machine, at its port + 100. The run directory is claimed
    for this launcher first (a second one on it is refused); with ``ip_config``
    on the first machine only (the others may share its file system).
    """
    with claim_run_dir(run_dir) if machine == 0 else contextlib.nullcontext():
        return _train_partitioned(run, run_dir, partitions, nproc, resume=resume, overwrite=overwrite,
                                  ip_config=ip_config, machine=machine)


def _train_partitioned(run: RunConfig, run_dir: str, partitions: str, nproc: int, *, resume: bool,
                       overwrite: bool, ip_config: Optional[str], machine: int) -> Optional[Dict[str, Any]]:
    parts = engine.read_partitions(partitions)
    sidecar = read_sidecar(partitions)
    check_matches_graph(partitions, sidecar, parts.num_nodes, parts.num_edges)
    if ip_config is None:
        hosts = [("127.0.0.1", free_port()) for _ in range(parts.num_parts)]
        machines, total, master = list(range(parts.num_parts)), nproc, ("127.0.0.1", free_port())
        if nproc % parts.num_parts:
            raise ConfigError(f"--nproc {nproc} trainers cannot share {parts.num_parts} partitions evenly; pass a "
                              f"multiple of {parts.num_parts}")
    else:
        hosts = engine.read_ip_config(ip_config)
        if len(hosts) != parts.num_parts:
            raise ConfigError(f"{ip_config} lists {len(hosts)} machines but {partitions} has {parts.num_parts} "
                              "partitions; DGL serves one partition per machine: partition into as many parts")
        if not 0 <= machine < len(hosts):
            raise ConfigError(f"--machine {machine} is not a line of {ip_config} (0..{len(hosts) - 1})")
        machines, total, master = [machine], nproc * len(hosts), (hosts[0][0], hosts[0][1] + 100)
    last = os.path.join(run_dir, files.LAST)
    if resume and os.path.isfile(last):  # on trainer 0's machine
        saved = load_checkpoint(last).get("ranks", {}).get("world_size", 1)
        if saved != total:
            raise ConfigError(f"this run was trained by {saved} trainers; resume it with as many (--nproc)")
    run.world_size = total
    if not resume:
        files.prepare_new_run_dir(run_dir, overwrite)
        files.write_json(os.path.join(run_dir, RUN_MARKER), {"partitions": os.path.abspath(partitions),
                                                             "nproc": nproc, "machine": machine,
                                                             "ip_config": ip_config and os.path.abspath(ip_config)})
        files.write_config(run_dir, run.to_dict())  # every machine: what --resume reads
    job_dir = tempfile.mkdtemp(prefix="geaet-dgl-job-")
    token = f"gd{secrets.token_hex(4)}"
    try:
        job = LocalJob(os.path.join(run_dir, LOG_DIR), token)
        errors_dir = os.path.join(job_dir, "errors")
        os.makedirs(errors_dir)
        ip_path = os.path.join(job_dir, "ip_config.txt")
        engine.write_ip_config(ip_path, hosts)
        confs = engine.machine_configs(parts, token, job_dir)
        spec = {"run": run.to_dict(), "run_dir": os.path.abspath(run_dir), "resume": resume, "ip_config": ip_path,
                "master": list(master), "num_trainers": total, "errors_dir": errors_dir,
                "graph_names": [engine.machine_graph_name(parts.graph_name, token, k) for k in range(parts.num_parts)]}
        spec_path = os.path.join(job_dir, "job.json")
        with open(spec_path, "w") as handle:
            json.dump(spec, handle)
        per_machine = total // parts.num_parts
        threads = str(max(1, (run.threads or 1) // (per_machine * len(machines))))

        def start(job: LocalJob) -> None:
            for k in machines:
                env = engine.server_env(k, ip_path, confs[k], total)
                job.start(f"server-{k}", dict(env, **{engine.MACHINE_ENV: str(k), engine.SHM_ENV: token,
                                                      JOB_ENV: spec_path}), server=True)
            for k in machines:
                for i in range(per_machine):
                    env = engine.trainer_env(ip_path, confs[k], total)
                    job.start(f"trainer-{k * per_machine + i}",
                              dict(env, **{engine.MACHINE_ENV: str(k), engine.SHM_ENV: token, JOB_ENV: spec_path,
                                           "OMP_NUM_THREADS": threads}), server=False)

        try:
            run_job(job, errors_dir, start)
        except JobStopped as stopped:  # say which folder, and whether there is anything to resume
            stopped.run_dir, stopped.checkpointed = run_dir, os.path.isfile(last)
            raise
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)
    if not os.path.isfile(os.path.join(run_dir, files.SUMMARY)):  # another machine holds trainer 0
        return None
    summary = score_best_on_graph(run_dir, sidecar["graph_file"]["path"], whole_graph_score_bytes(parts, sidecar))
    summary["peak_rss_mib"] = {name: round(value, 1) for name, value in sorted(job.peak_mib.items())}
    files.write_json(os.path.join(run_dir, files.SUMMARY), summary)
    return summary


def partitioned_summary_line(summary: Dict[str, Any]) -> str:
    """What ``train --partitions`` prints after the run's own line: ``best.pt`` on the whole graph and the peaks."""
    whole = (f"val {summary['metric_name']} {summary['full_graph_val_metric']:.6f}, test "
             f"{summary['full_graph_test_metric']:.6f}" if "full_graph_val_metric" in summary else
             "not scored (too large for this machine's free memory; see the log)")
    return f"best.pt on the whole graph: {whole}; peak memory (MiB) " + ", ".join(
        f"{name} {mib:.0f}" for name, mib in summary.get("peak_rss_mib", {}).items())


def score_on_graph(checkpoint: str, graph_file: str) -> Dict[str, float]:
    """``{split: metric}`` of a checkpoint's model on the whole graph, val and test.

    Scored as ``geaet-dgl eval`` scores a node task: one full-graph pass
    (layer-wise when it does not fit), every node with its whole graph as context.
    """
    state = load_checkpoint(checkpoint)
    run = check_environment(RunConfig.from_dict(state["run_config"]))
    model = build_model(run.model)
    model.load_state_dict(state["model"])
    lap_k, rwse_k = data_pe_sizes(run.model)
    data = load_single_graph(graph_file, lap_k, rwse_k or 0)
    scores = evaluate_node_splits(model, data, get_loss(run.train.loss), run.train.metric, torch.device("cpu"))
    return {split: result["metric"] for split, result in scores.items()}


#: Bytes of scoring a checkpoint on a whole graph file in one process (:func:`score_on_graph`): per stored edge
#: and per node besides its float features (measured: ``eval`` on the ogbn-products-sized graph, 2.45M nodes and
#: 124M edges, peaked at 10.2 GiB; docs/performance.md#an-ogbn-products-sized-graph).
SCORE_BYTES_PER_EDGE, SCORE_BYTES_PER_NODE = 70, 600


def whole_graph_score_bytes(parts: "engine.PartitionSet", sidecar: Dict[str, Any]) -> int:
    """About the peak bytes of :func:`score_on_graph` on the graph the partitions were cut from."""
    width = int((sidecar.get("features") or {}).get("node_in_feats") or 0)
    return parts.num_edges * SCORE_BYTES_PER_EDGE + parts.num_nodes * (SCORE_BYTES_PER_NODE + 4 * width)


def score_best_on_graph(run_dir: str, graph_file: str, needed_bytes: int = 0) -> Dict[str, Any]:
    """Add ``best.pt``'s whole-graph val and test metrics (:func:`score_on_graph`) to ``summary.json``.

    Skipped, with a log line saying how to score it elsewhere, when ``needed_bytes`` (the estimate of
    :func:`whole_graph_score_bytes`) is more than the machine has available: the trainers scored every node
    during training, and a graph the size of ogbn-papers100M is not loaded whole on one machine."""
    summary_path = os.path.join(run_dir, files.SUMMARY)
    available = available_bytes(torch.device("cpu"))
    if needed_bytes > available:
        log.warning("best.pt is not scored on the whole graph file here: that takes about %.1f GiB and %.1f GiB are "
                    "available; score it where it fits with `geaet-dgl eval --checkpoint %s`", needed_bytes / 2**30,
                    available / 2**30, os.path.join(run_dir, files.BEST))
        with open(summary_path) as handle:
            return json.load(handle)
    scores = score_on_graph(os.path.join(run_dir, files.BEST), graph_file)
    with open(summary_path) as handle:
        summary = json.load(handle)
    summary.update({f"full_graph_{split}_metric": value for split, value in scores.items()})
    files.write_json(summary_path, summary)
    return summary
