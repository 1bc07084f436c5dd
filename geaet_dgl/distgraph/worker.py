"""What a graph server or a trainer process runs: ``python -m geaet_dgl.distgraph.worker``.

The role comes from DGL's ``DGL_ROLE`` (see :mod:`.engine`), the job (run
configuration, run directory, ``ip_config``, the torch.distributed rendezvous)
from the JSON file named by ``$GEAET_DGL_JOB``. A trainer that fails leaves
its exception pickled in the job's ``errors`` folder for the launcher to
re-raise as one line.
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import signal
import sys
import threading

JOB_ENV = "GEAET_DGL_JOB"


#: Signals a graph server stops on at once (it shares the launcher's process group: a Ctrl-C or a closed
#: terminal reaches it, and the launcher stops it with SIGTERM, as does the kernel when the launcher dies).
SERVER_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def stop_on_signals(cleanup) -> None:
    """Exit with 128 + the signal, after ``cleanup()``, on :data:`SERVER_STOP_SIGNALS`, whatever the main thread does.

    A server's main thread waits in DGL's C++ RPC loop, where neither Python's
    signal handlers (they run between bytecodes) nor DGL's own (it calls
    ``exit`` inside the handler, which can hang) stop it reliably. So the
    signals are blocked in every thread (threads started later inherit the
    mask) and one thread takes them with ``sigwait``; DGL's calls release the
    GIL, so that thread runs at once.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, SERVER_STOP_SIGNALS)

    def wait() -> None:
        signum = signal.sigwait(SERVER_STOP_SIGNALS)
        try:
            cleanup()
        finally:
            os._exit(128 + signum)

    threading.Thread(target=wait, name="stop-on-signal", daemon=True).start()


def run_server(job: dict) -> None:
    """Serve one partition until trainer 0 exits (``initialize`` never returns in a server)."""
    import dgl.distributed

    from .engine import SHM_ENV, remove_shared_memory

    token = os.environ.get(SHM_ENV)
    stop_on_signals(lambda: remove_shared_memory(token) if token else None)
    dgl.distributed.initialize(job["ip_config"])


def run_trainer(job: dict) -> None:
    """Join the graph servers and the other trainers, then train (:func:`.trainer.train_on_source`)."""
    import dgl.distributed
    import torch.distributed as dist
    from dgl.distributed import role

    from ..training.distributed import DistContext
    from ..config import RunConfig
    from ..training.environment import check_environment
    from .trainer import DistSource, train_on_source

    dgl.distributed.initialize(job["ip_config"])
    rank, world_size = role.get_trainer_rank(), int(job["num_trainers"])
    if rank == 0:  # its epoch lines, relayed by the launcher (:meth:`.processes.LocalJob.relay`)
        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout, force=True)
    host, port = job["master"]
    dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=float(job.get("timeout_s", 600))))
    context = DistContext(rank, world_size, rank, "gloo")
    graph_names = job["graph_names"]
    machine = int(os.environ.get("GEAET_DGL_MACHINE", job.get("machine", 0)))
    graph = dgl.distributed.DistGraph(graph_names[machine] if len(graph_names) > 1 else graph_names[0])
    run = check_environment(RunConfig.from_dict(job["run"]))
    train_on_source(run, job["run_dir"], DistSource(graph), context, resume=bool(job.get("resume")))
    dist.barrier()  # every trainer done; the process group is not destroyed: see main()
    dgl.distributed.exit_client()  # DGL's client barrier; trainer 0 then shuts the servers down


def main() -> None:
    from .engine import simulate_machine

    with open(os.environ[JOB_ENV]) as handle:
        job = json.load(handle)
    simulate_machine()
    if os.environ.get("DGL_ROLE") == "server":
        run_server(job)
        return
    try:
        run_trainer(job)
    except BaseException as exc:
        from ..training.launcher import save_exception

        save_exception(job["errors_dir"], f"trainer-{os.getpid()}", exc)
        import traceback

        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)  # not sys.exit: DGL's atexit handler would wait for the other trainers in a barrier
    # os._exit, not a normal exit: destroying gloo's process group (destroy_process_group, or the interpreter's
    # shutdown) joins gloo's worker threads while holding the GIL, and a worker waiting for the GIL deadlocks it
    # (seen in about one run in ten on the loaded test machine, even after a barrier).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
