"""The lab beside the library: benchmarks, the side-by-side comparison with the PyG reference, studies.

``geaet_lab`` is a second top-level package of the ``geaet-dgl`` distribution. It uses the library
(:mod:`geaet_dgl`) through its public names only, and the library never imports it
(``tests/test_import_direction.py`` keeps both so).

:mod:`.benchmarking`
    ``geaet-dgl benchmark``: throughput, step breakdown, epochs, scaling, and timing against the reference.
:mod:`.interop`
    ``geaet-dgl compare`` / ``export-reference``: our graphs exported as PyG's files and batches, the
    reference's own ``main.py`` run and read back, the graphs checked equal on both sides.
:mod:`.studies`
    ``geaet-dgl sweep`` / ``attention``: sweeps and ablations over seeds, attention maps (and, in
    :mod:`.studies.node_samplers`, the node samplers' accuracy against full-graph training).
:mod:`.commands`
    The lab's subcommands of the one ``geaet-dgl`` command line, registered in the
    ``geaet_dgl.commands`` entry-point group (``setup.cfg``); see :mod:`geaet_dgl.cli`.
"""
