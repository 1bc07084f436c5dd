"""DGL's launch conventions for graph servers and trainers (``dgl.distributed``, DGL 2.1).

DGL's ``tools/launch.py`` starts, on every machine listed in ``ip_config``
(one line ``IP [PORT]`` per machine), one graph server per partition and the
trainers, and tells each process its part through the environment:

=====================  ================================================================
``DGL_ROLE``           ``server`` or ``client`` (trainer)
``DGL_DIST_MODE``      ``distributed`` (else DGL runs in standalone mode, one partition)
``DGL_SERVER_ID``      server index = machine index * ``DGL_NUM_SERVER`` + i; it serves
                       partition ``DGL_SERVER_ID // DGL_NUM_SERVER``
``DGL_NUM_SERVER``     servers per machine (1 main + backups sharing its memory)
``DGL_NUM_CLIENT``     trainers and sampler processes of all machines together
``DGL_IP_CONFIG``      the ``ip_config`` file
``DGL_CONF_PATH``      the partition JSON written by ``partition_graph``
``DGL_NUM_SAMPLER``    sampler processes per trainer (0: sample in the trainer)
``DGL_GRAPH_FORMAT``   sparse formats the servers build (``csc``)
=====================  ================================================================

A server process calls ``dgl.distributed.initialize`` and never returns
(it serves until trainer 0 sends the shut-down request when it exits); a
trainer calls ``initialize`` and then ``torch.distributed.init_process_group``.

Several partitions on one machine
---------------------------------
DGL identifies a machine by its IP (a trainer is on machine ``m`` when the
``m``-th line of ``ip_config`` is one of its interfaces' addresses) and its
servers share their partition with the machine's trainers through POSIX
shared memory named after the graph and the feature (``/dev/shm/node~_N~feat-kvdata-``).
With two partitions on one host both servers write the *same* shared-memory
objects and every trainer thinks it is on machine 0: the second server
overwrites the first one's features, and the first pull fails in DGL's
``rpc.cc`` ("Check failed: l_id < local_data_shape[0]"). Tested with
DGL 2.1.0. :func:`simulate_machine` therefore gives each simulated machine
its own machine index and shared-memory prefix, and :func:`machine_configs`
its own graph name; on real machines (one partition each) nothing is patched.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from ..data.errors import DataError

#: Environment variable naming the simulated machine of a process started by :mod:`.processes`.
MACHINE_ENV = "GEAET_DGL_MACHINE"
#: Environment variable with the job's shared-memory prefix (removed from /dev/shm when the job ends).
SHM_ENV = "GEAET_DGL_SHM_PREFIX"


@dataclass(frozen=True)
class PartitionSet:
    """A partition JSON of ``dgl.distributed.partition_graph`` and what it names."""

    path: str
    graph_name: str
    num_parts: int
    num_nodes: int
    num_edges: int
    meta: dict

    def part_dirs(self) -> List[str]:
        """Absolute folders of the partitions, ``part0 ... part{n-1}``."""
        base = os.path.dirname(os.path.abspath(self.path))
        return [os.path.dirname(os.path.join(base, self.meta[f"part-{i}"]["part_graph"]))
                for i in range(self.num_parts)]


def read_partitions(path: str) -> PartitionSet:
    """Read and check a partition JSON: every partition's three files must exist.

    Raises :class:`~geaet_dgl.data.errors.DataError` in one line for a missing
    file, a JSON that is not DGL's, or a missing partition folder.
    """
    if not os.path.isfile(path):
        raise DataError(f"partition file {path} does not exist; write it with "
                        "`geaet-dgl partition FILE.bin --parts N --out DIR` and pass DIR/NAME.json")
    try:
        with open(path) as handle:
            meta = json.load(handle)
        graph_name, num_parts = str(meta["graph_name"]), int(meta["num_parts"])
        num_nodes, num_edges = int(meta["num_nodes"]), int(meta["num_edges"])
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path} is not a partition file of dgl.distributed.partition_graph ({exc!r}); "
                        "pass the NAME.json that `geaet-dgl partition` wrote") from exc
    base = os.path.dirname(os.path.abspath(path))
    for i in range(num_parts):
        entry = meta.get(f"part-{i}")
        if not isinstance(entry, dict):
            raise DataError(f"{path} lists no partition {i} of {num_parts}; partition the graph again")
        for key in ("node_feats", "edge_feats", "part_graph"):
            file = os.path.join(base, entry.get(key, ""))
            if not os.path.isfile(file):
                raise DataError(f"partition {i} of {path} is missing ({file} does not exist); copy the whole "
                                "folder that `geaet-dgl partition` wrote, or partition the graph again")
    return PartitionSet(os.path.abspath(path), graph_name, num_parts, num_nodes, num_edges, meta)


def write_ip_config(path: str, hosts: Sequence[Tuple[str, int]]) -> None:
    """``ip_config`` with one ``IP PORT`` line per (simulated) machine."""
    Path(path).write_text("".join(f"{host} {port}\n" for host, port in hosts))


def read_ip_config(path: str) -> List[Tuple[str, int]]:
    """``[(ip, port), ...]`` of an ``ip_config`` file (DGL's default port 30050 when a line has none)."""
    if not os.path.isfile(path):
        raise DataError(f"ip config {path} does not exist; write one line 'IP [PORT]' per machine")
    hosts = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) > 2 or (len(fields) == 2 and not fields[1].isdigit()):
            raise DataError(f"{path} line {number} is {line!r}; write 'IP' or 'IP PORT' per line")
        hosts.append((fields[0], int(fields[1]) if len(fields) == 2 else 30050))
    if not hosts:
        raise DataError(f"{path} lists no machine; write one line 'IP [PORT]' per machine")
    return hosts


def machine_graph_name(graph_name: str, token: str, machine: int) -> str:
    """The graph name simulated machine ``machine`` of job ``token`` serves under."""
    return f"{graph_name}-{token}-m{machine}"


def machine_configs(parts: PartitionSet, token: str, out_dir: str) -> List[str]:
    """One copy of the partition JSON per simulated machine, each with its own graph name.

    DGL's servers name their shared memory after the graph: distinct names
    keep the partitions of one host apart. The copies point at the original
    partition files by absolute path.
    """
    paths = []
    for machine in range(parts.num_parts):
        meta = dict(parts.meta, graph_name=machine_graph_name(parts.graph_name, token, machine))
        for i, folder in enumerate(parts.part_dirs()):
            meta[f"part-{i}"] = {key: os.path.join(folder, os.path.basename(value))
                                 for key, value in parts.meta[f"part-{i}"].items()}
        path = os.path.join(out_dir, f"machine{machine}.json")
        with open(path, "w") as handle:
            json.dump(meta, handle)
        paths.append(path)
    return paths


def base_env(ip_config: str, conf_path: str, num_clients: int, servers_per_machine: int = 1) -> Dict[str, str]:
    """The ``DGL_*`` variables servers and trainers share (see the module table)."""
    return {"DGL_DIST_MODE": "distributed", "DGL_IP_CONFIG": os.path.abspath(ip_config),
            "DGL_CONF_PATH": os.path.abspath(conf_path), "DGL_NUM_SERVER": str(servers_per_machine),
            "DGL_NUM_CLIENT": str(num_clients), "DGL_NUM_SAMPLER": "0", "DGL_GRAPH_FORMAT": "csc"}


def server_env(server_id: int, ip_config: str, conf_path: str, num_clients: int) -> Dict[str, str]:
    """Environment of graph server ``server_id`` (one server per machine: it serves partition ``server_id``)."""
    return dict(base_env(ip_config, conf_path, num_clients), DGL_ROLE="server", DGL_SERVER_ID=str(server_id),
                OMP_NUM_THREADS="1")


def trainer_env(ip_config: str, conf_path: str, num_clients: int) -> Dict[str, str]:
    """Environment of a trainer (``DGL_ROLE=client``); the torch.distributed variables are added by the caller."""
    return dict(base_env(ip_config, conf_path, num_clients), DGL_ROLE="client", DGL_GROUP_ID="0")


def simulate_machine() -> None:
    """Make this process act as machine ``$GEAET_DGL_MACHINE`` of a one-host job (no-op without it).

    Two patches of ``dgl.distributed`` (see the module docstring): the machine
    index is taken from the environment instead of the host's IP, and the
    key-value store's shared-memory names get the machine's prefix. Must run
    before ``dgl.distributed.initialize``.
    """
    if MACHINE_ENV not in os.environ:
        return
    import dgl.distributed.kvstore as kvstore
    import dgl.distributed.rpc_client as rpc_client

    machine = int(os.environ[MACHINE_ENV])
    prefix = f"{os.environ.get(SHM_ENV, 'geaet')}m{machine}-"
    rpc_client.get_local_machine_id = lambda server_namebook: machine
    create = kvstore.empty_shared_mem
    kvstore.empty_shared_mem = lambda name, *args: create(prefix + name, *args)


def remove_shared_memory(token: str, root: str = "/dev/shm") -> int:
    """Delete the shared-memory objects whose name holds ``token`` (left behind by killed servers)."""
    removed = 0
    if not os.path.isdir(root):
        return removed
    for name in os.listdir(root):
        if token in name:
            try:
                os.unlink(os.path.join(root, name))
                removed += 1
            except OSError:
                pass
    return removed
