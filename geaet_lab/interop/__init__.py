"""The lab's side of the PyG reference (icm1018/GEAET, on GraphGPS / graphgym): comparing with it.

- :mod:`.compare`: ``geaet-dgl compare``, accuracy side by side: :mod:`.pyg_export` writes our graphs as the
  raw files PyG's ``GNNBenchmarkDataset`` reads, :mod:`.reference_dump` (run with the reference's Python)
  and :mod:`.graph_check` check both sides hold the same graphs, :mod:`.reference_run` runs the reference's
  own ``main.py`` and reads its stats, :mod:`.compare_report` aggregates over seeds and plots.
- :mod:`.compare_nodes`: ``compare --config`` for GraphGPS's node files (Actor, WebKB, WikipediaNetwork):
  :mod:`.pyg_node_export` writes our node set as the geom-gcn raw files PyG's loaders read,
  :mod:`.reference_dump` (``--node-set``) (the reference's Python) and :mod:`.node_check` check the graph and split.
- :mod:`.pyg_export`: our DGL graphs as PyG data: the raw files above, and the ``Data`` / ``Batch``
  objects (:func:`~.pyg_export.to_pyg_batch`) that the in-process comparisons feed the reference.
- :mod:`.reference_model`: the reference's network built in this process from the user's checkout
  (parity checks and ``benchmark --against-pyg``, in :mod:`geaet_lab.benchmarking`);
  :mod:`.reference_loader`: the input statistics its loader computes.

Only :mod:`.reference_model` imports the reference (and PyG with it, as do the ``to_pyg_*`` functions when
called); everything else reads its files as plain YAML and plain ``torch.save`` data, and runs its code
only as a subprocess from the user's checkout and Python.

What a user's run needs of the reference stays in the library, :mod:`geaet_dgl.interop`: its YAML files
read into our configuration (``train --config``) and its checkpoints imported (``import-reference``) and
exported (``export-reference``, a command of this lab).
"""
