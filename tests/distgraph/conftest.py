"""A small node task on one graph (planted partition) and a guard that no process or shared memory outlives a test."""
import json
import os
import signal

import dgl
import pytest
import torch

#: Model and training settings of the distributed tests: small and fast, loss falling every epoch.
SMALL_RUN = {"model.pe": "none", "model.num_layers": "2", "model.hidden_dim": "32", "model.geanet.unit_size": "8",
             "model.attention": "none", "train.epochs": "8", "train.warmup_epochs": "0", "train.lr": "1e-2"}


def planted_graph(num_nodes: int = 1000, classes: int = 3, seed: int = 0) -> dgl.DGLGraph:
    """Planted partition: same-class pairs always joined, other pairs 1 in 10; features = 2 * one-hot + N(0, 1)."""
    gen = torch.Generator().manual_seed(seed)
    label = torch.randint(0, classes, (num_nodes,), generator=gen)
    src = torch.randint(0, num_nodes, (num_nodes * 6,), generator=gen)
    dst = torch.randint(0, num_nodes, (num_nodes * 6,), generator=gen)
    keep = (label[src] == label[dst]) | (torch.rand(len(src), generator=gen) < 0.1)
    graph = dgl.to_bidirected(dgl.graph((src[keep], dst[keep]), num_nodes=num_nodes))
    graph.ndata["feat"] = 2.0 * torch.nn.functional.one_hot(label, classes).float() + torch.randn(
        num_nodes, classes, generator=gen)
    graph.ndata["label"] = label
    draw = torch.rand(num_nodes, generator=gen)
    graph.ndata["train_mask"] = draw < 0.5
    graph.ndata["val_mask"] = (draw >= 0.5) & (draw < 0.7)
    graph.ndata["test_mask"] = draw >= 0.7
    return graph


@pytest.fixture
def graph_file(tmp_path):
    path = str(tmp_path / "planted.bin")
    dgl.save_graphs(path, [planted_graph()])
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (ended, not yet reaped by its parent) counts as gone
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


def leftover_processes(run_dir: str) -> list:
    """Names of the job's processes (``dist-logs/pids.json``) still running."""
    path = os.path.join(run_dir, "dist-logs", "pids.json")
    if not os.path.isfile(path):
        return []
    with open(path) as handle:
        pids = json.load(handle)
    return [name for name, pid in pids.items() if _alive(pid)]


@pytest.fixture
def job_guard():
    """Collects run directories; afterwards kills whatever of their jobs is still running, then fails if any was."""
    run_dirs = []
    yield run_dirs
    survivors = []
    for run_dir in run_dirs:
        path = os.path.join(run_dir, "dist-logs", "pids.json")
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            pids = json.load(handle)
        for name, pid in pids.items():
            if _alive(pid):
                survivors.append(name)
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
    assert not survivors, f"processes left behind: {survivors}"
