import hashlib
import os
import sys

import pytest

from geaet_dgl.data import load_graph_file

#: The module that reads graph files (and trial-loads them in a forked child first).
GRAPH_FILE_READER = sys.modules[load_graph_file.__module__]


@pytest.fixture(scope="module")
def trial_load_once_per_content():
    """Each content of a graph file (and list of graphs read) gets its trial load in a forked child once per module.

    Reading one file the way the commands do loads it several times (its first graph, to tell a node file,
    then all graphs, for the run's settings and again for its data), each after a trial load of the same bytes
    in a child; a second trial of identical bytes can show nothing new, and forking this process takes 0.5-2 s
    on 2 busy cores. Every load in this process still happens, and a trial that failed is not remembered.
    """
    original = GRAPH_FILE_READER._trial_load
    passed = set()

    def trial_load(path, idx=None):
        if not os.path.isfile(path):
            return original(path, idx)
        with open(path, "rb") as handle:
            key = (hashlib.sha1(handle.read()).hexdigest(), None if idx is None else tuple(idx))
        if key not in passed:
            original(path, idx)
            passed.add(key)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GRAPH_FILE_READER, "_trial_load", trial_load)
        yield
