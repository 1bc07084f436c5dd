"""Interoperability with the PyG reference (icm1018/GEAET, on GraphGPS / graphgym).

- :mod:`.reference_config`: read the reference's YAML configuration files into our dataclasses.
- :mod:`.reference_checkpoint`: turn the reference's ``ckpt/<epoch>.ckpt`` into our run directory and back
  (parameter names in :mod:`.reference_names`).
- :mod:`.compare`: ``geaet-dgl compare``, accuracy side by side: :mod:`.pyg_export` writes our graphs as the
  raw files PyG's ``GNNBenchmarkDataset`` reads, :mod:`.reference_dump` (run with the reference's Python)
  and :mod:`.graph_check` check both sides hold the same graphs, :mod:`.reference_run` runs the reference's
  own ``main.py`` and reads its stats, :mod:`.compare_report` aggregates over seeds and plots.

Nothing here imports the reference: its files are read as plain YAML and plain ``torch.save`` data, and
its code runs only as a subprocess from the user's checkout and Python.
"""
from .reference_config import ReferenceConfig, read_reference_config, reference_run_config

__all__ = ["ReferenceConfig", "read_reference_config", "reference_run_config"]
