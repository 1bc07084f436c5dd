"""Interoperability with the PyG reference (icm1018/GEAET, on GraphGPS / graphgym).

- :mod:`.reference_config`: read the reference's YAML configuration files into our dataclasses.
- :mod:`.reference_checkpoint`: turn the reference's ``ckpt/<epoch>.ckpt`` into our run directory and back.

Nothing here imports the reference: its files are read as plain YAML and plain ``torch.save`` data.
"""
from .reference_config import ReferenceConfig, read_reference_config, reference_run_config

__all__ = ["ReferenceConfig", "read_reference_config", "reference_run_config"]
