"""Trained models that leave the training stack: TorchScript and ONNX files that run without DGL.

:class:`~.model.ExportedGEAET` computes what a trained :class:`~geaet_dgl.models.geaet.GEAET` computes in eval
mode, on plain tensors (node features, an edge index, edge features, nodes per graph, the encodings the
model reads), its edge work written with PyTorch ops both exporters read (:mod:`.scatter`). :mod:`.writer`
turns a checkpoint into a file (``geaet-dgl export``) with the settings a caller needs stored inside it.
What is not covered is refused with one :class:`~.layers.ExportError` line. docs/export.md says why the
exported layers are a second, torch-only forward of each layer's eval math, read from the same weights.
"""
from .common import ExportError
from .model import INPUT_NAMES, ExportedGEAET, check_exportable

__all__ = ["ExportError", "ExportedGEAET", "INPUT_NAMES", "check_exportable"]
