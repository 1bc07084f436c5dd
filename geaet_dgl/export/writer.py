"""A trained checkpoint as one self-contained TorchScript or ONNX file (``geaet-dgl export``).

The file holds the :class:`~.model.ExportedGEAET` of the run's model and, as JSON, what a caller needs to
feed it and to read its output (:func:`export_metadata`): the inputs it reads, the encodings to compute
and their settings (Laplacian eigenpairs, its normalisation, random-walk steps), the output's meaning and
the batch size ``geaet-dgl predict`` uses. TorchScript keeps the JSON as the extra file
:data:`METADATA_NAME` (``torch.jit.load(path, _extra_files={METADATA_NAME: ""})``), ONNX as the model's
metadata property of that name (``onnxruntime``: ``session.get_modelmeta().custom_metadata_map``).

TorchScript is ``torch.jit.script`` of the module (its shapes are whatever the inputs have); ONNX is
``torch.onnx.export`` (opset :data:`ONNX_OPSET`, for ``ScatterElements`` with ``max``) with every
node, edge and graph axis dynamic. The file is written atomically.
"""
from __future__ import annotations

import io
import json
import os
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

from .. import __version__
from ..atomic import atomic_write
from ..config import ModelConfig, RunConfig
from ..data.registry import input_transform_of, laplacian_norm_of
from ..data.run_splits import data_pe_sizes
from ..scoring.predict import output_kind
from ..scoring.trained_run import open_trained_run
from .layers import ExportError
from .model import INPUT_NAMES, ExportedGEAET

PathLike = Union[str, os.PathLike]

FORMATS = ("torchscript", "onnx")
#: Name of the JSON settings inside an exported file.
METADATA_NAME = "geaet_export.json"
#: Version of the exported file's inputs and settings.
#: 2: the inputs ``degrees``, ``spatial_types`` and ``path_types`` (Graphormer) after the first seven of 1.
#: 3: no ``degrees`` input (nine inputs): the model computes Graphormer's degrees from ``edge_index``;
#: ``graphormer.degrees`` in the settings still tells whether it adds degree embeddings.
EXPORT_FORMAT = 3
ONNX_OPSET = 18
#: Dynamic axes of every input and of the output (ONNX).
DYNAMIC_AXES = {"x": {0: "nodes"}, "edge_index": {1: "edges"}, "edge_attr": {0: "edges"},
                "node_counts": {0: "graphs"}, "lap_pe": {0: "nodes"}, "lap_eigval": {0: "nodes"},
                "rwse": {0: "nodes"}, "spatial_types": {0: "nodes", 1: "width"},
                "path_types": {0: "nodes", 1: "width"}, "output": {0: "rows"}}


def input_widths(run: RunConfig) -> Dict[str, int]:
    """Columns of each input the run's model reads; 0 for an input it does not read (pass an (M, 0) tensor).
    ``spatial_types``: Graphormer's number of spatial types S where the model reads them (the tensor's width is
    the batch's largest graph, or more); ``path_types``: the steps S of each path (its width as
    ``spatial_types``'s). Graphormer's degrees are no input: the model computes them."""
    return model_input_widths(run.model)


def model_input_widths(model: ModelConfig) -> Dict[str, int]:
    """:func:`input_widths` of a model configuration."""
    lap_k, rwse_k = data_pe_sizes(model)
    edge = model.edge_in_feats if model.edge_encoder in ("linear", "embedding", "typedict") else 0
    graphormer = model.graphormer
    bias = graphormer.enable and not graphormer.degrees_only
    return {"x": model.node_in_feats, "edge_attr": edge,
            "lap_pe": lap_k if model.pe in ("eslappe", "lappe", "signnet") else 0,
            "lap_eigval": lap_k if model.pe == "lappe" else 0, "rwse": rwse_k or 0,
            "spatial_types": graphormer.spatial_types if bias else 0,
            "path_types": graphormer.spatial_types if bias and graphormer.num_edge_types else 0}


def export_metadata(run: RunConfig) -> Dict[str, Any]:
    """The settings stored in an exported file (see the module docstring)."""
    model = run.model
    kind = output_kind(run)
    lap_k, rwse_k = data_pe_sizes(model)
    widths = input_widths(run)
    return {
        "export_format": EXPORT_FORMAT,
        "geaet_dgl_version": __version__,
        "inputs": list(INPUT_NAMES),
        "input_widths": widths,
        "node_features": "types" if model.node_encoder in ("embedding", "typedict") else "float",
        "edge_features": "types" if model.edge_encoder in ("embedding", "typedict") else "float",
        "encodings": {"lap_pe_k": widths["lap_pe"], "lap_eigval": bool(widths["lap_eigval"]),
                      "laplacian_norm": run.data.laplacian_norm or laplacian_norm_of(run.data.dataset),
                      "rwse_k": widths["rwse"]},
        "graphormer": {"degrees": bool(model.graphormer.enable), "num_in_degrees": model.graphormer.num_in_degrees,
                       "num_out_degrees": model.graphormer.num_out_degrees,
                       "spatial_types": widths["spatial_types"], "path_types": bool(widths["path_types"]),
                       "num_edge_types": model.graphormer.num_edge_types if widths["path_types"] else 0},
        "output": {"level": kind.level, "kind": kind.kind, "width": kind.width},
        "batch_size": run.train.batch_size,
        "geanet_scope": model.geanet.scope if model.external else None,
        "dataset": run.data.dataset,
    }


def example_inputs(widths: Dict[str, int], node_counts: Tuple[int, ...] = (4, 3),
                   edges: Tuple[Tuple[int, int], ...] = ((0, 1), (1, 2), (2, 0), (3, 2), (4, 5), (5, 6), (6, 4))
                   ) -> Tuple[torch.Tensor, ...]:
    """Inputs of the right widths and dtypes for a small batch (the ONNX exporter traces the model on them)."""
    nodes, num_edges = sum(node_counts), len(edges)
    generator = torch.Generator().manual_seed(0)
    width = max(node_counts)
    spatial = torch.randint(0, 2, (nodes, width if widths["spatial_types"] else 0), generator=generator)
    paths = torch.zeros(nodes, width if widths["path_types"] else 0, widths["path_types"], dtype=torch.long)
    return (torch.randint(0, 2, (nodes, widths["x"]), generator=generator).to(torch.float32),
            torch.tensor(edges, dtype=torch.long).t().contiguous(),
            torch.randint(0, 2, (num_edges, widths["edge_attr"]), generator=generator).to(torch.float32),
            torch.tensor(node_counts, dtype=torch.long),
            torch.rand(nodes, widths["lap_pe"], generator=generator),
            torch.rand(nodes, widths["lap_eigval"], generator=generator),
            torch.rand(nodes, widths["rwse"], generator=generator), spatial, paths)


def inputs_of_batch(batch, widths: Dict[str, int]) -> Tuple[torch.Tensor, ...]:
    """The exported model's inputs, in :data:`~.model.INPUT_NAMES` order, for a batched DGL graph carrying the
    features as files store them (before any input transform) and the encodings ``geaet-dgl`` attaches;
    ``widths`` is :func:`input_widths`'s (an input of width 0 becomes an (M, 0) tensor)."""
    src, dst = batch.edges()
    nodes, edges = batch.num_nodes(), batch.num_edges()

    def node_field(name: str) -> torch.Tensor:
        return batch.ndata[name].float()[:, :widths[name]] if widths[name] else torch.zeros(nodes, 0)

    edge_attr = batch.edata["feat"].float().reshape(edges, -1) if widths["edge_attr"] else torch.zeros(edges, 0)
    spatial = batch.ndata["spatial_types"].long() if widths["spatial_types"] else \
        torch.zeros(nodes, 0, dtype=torch.long)
    paths = batch.ndata["path_types"].long() if widths["path_types"] else torch.zeros(nodes, 0, 0, dtype=torch.long)
    return (batch.ndata["feat"].float().reshape(nodes, -1), torch.stack([src, dst]), edge_attr,
            batch.batch_num_nodes(), node_field("lap_pe"), node_field("lap_eigval"), node_field("rwse"), spatial,
            paths)


def torchscript_bytes(module: ExportedGEAET, metadata: Dict[str, Any]) -> bytes:
    """``module`` compiled with ``torch.jit.script``, saved with ``metadata`` as its extra file."""
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(module), buffer, _extra_files={METADATA_NAME: json.dumps(metadata)})
    return buffer.getvalue()


def onnx_bytes(module: ExportedGEAET, metadata: Dict[str, Any]) -> bytes:
    """``module`` exported to ONNX (dynamic axes everywhere), ``metadata`` as a metadata property."""
    try:
        import onnx
    except ImportError:
        raise ExportError("--format onnx needs the onnx package: pip install onnx (and onnxruntime to run the "
                          "file)") from None
    import warnings

    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the tracer's notes on shapes read as Python numbers: none is baked in
        warnings.simplefilter("ignore")
        torch.onnx.export(module, example_inputs(metadata["input_widths"]), buffer, input_names=list(INPUT_NAMES),
                          output_names=["output"], dynamic_axes=DYNAMIC_AXES, opset_version=ONNX_OPSET)
    proto = onnx.load_from_string(buffer.getvalue())
    entry = proto.metadata_props.add()
    entry.key, entry.value = METADATA_NAME, json.dumps(metadata)
    return proto.SerializeToString()


def export_checkpoint(checkpoint: PathLike, fmt: str, out: PathLike) -> Dict[str, Any]:
    """Write ``checkpoint``'s model as a ``fmt`` ('torchscript' or 'onnx') file at ``out``, atomically.

    Raises
    ------
    ExportError
        A part of the model the exporter does not cover (named), or a format it does not know.
    CheckpointError
        The checkpoint is missing or damaged.

    Returns
    -------
    dict
        ``{"out", "format", "bytes", "metadata"}``.
    """
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    run, model, _ = open_trained_run(checkpoint)
    transform = run.data.input_transform or input_transform_of(run.data.dataset)
    module = ExportedGEAET(model, transform).eval()
    metadata = export_metadata(run)
    payload = torchscript_bytes(module, metadata) if fmt == "torchscript" else onnx_bytes(module, metadata)
    with atomic_write(out, "wb") as handle:
        handle.write(payload)
    return {"out": os.fspath(out), "format": fmt, "bytes": len(payload), "metadata": metadata}


def read_metadata(path: PathLike) -> Dict[str, Any]:
    """The settings stored in an exported file (TorchScript or ONNX, told apart by their first bytes)."""
    with open(path, "rb") as handle:
        zip_file = handle.read(2) == b"PK"  # TorchScript files are zip archives
    if zip_file:
        extra = {METADATA_NAME: ""}
        torch.jit.load(os.fspath(path), _extra_files=extra)
        return json.loads(extra[METADATA_NAME])
    import onnx

    proto = onnx.load(os.fspath(path), load_external_data=False)
    found: List[Optional[str]] = [p.value for p in proto.metadata_props if p.key == METADATA_NAME]
    if not found:
        raise ExportError(f"{os.fspath(path)} holds no {METADATA_NAME}; export it with geaet-dgl export")
    return json.loads(found[0])
