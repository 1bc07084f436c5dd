"""``geaet-dgl export``: a trained checkpoint as a TorchScript or ONNX file that runs without DGL."""
from __future__ import annotations

import click

from .options import handle_errors


@click.command(name="export")
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False),
              help="A best.pt or last.pt of a run (an imported reference checkpoint included).")
@click.option("--format", "fmt", required=True, type=click.Choice(["torchscript", "onnx"]),
              help="torchscript: load with torch.jit.load; onnx: run with onnxruntime (needs the onnx package).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Where the exported model goes (written atomically).")
@handle_errors
def export(checkpoint: str, fmt: str, out: str) -> None:
    """Export a trained model (eval mode) as one file whose inputs are plain tensors: node features, edge index,
    edge features, nodes per graph and the encodings it reads (docs/export.md). Parts not exported yet are refused
    with one line naming them."""
    from geaet_dgl.export.writer import export_checkpoint

    result = export_checkpoint(checkpoint, fmt, out)
    meta = result["metadata"]
    encodings = meta["encodings"]
    needs = [name for name, on in (("Laplacian eigenvectors", encodings["lap_pe_k"]),
                                   ("eigenvalues", encodings["lap_eigval"]), ("RWSE", encodings["rwse_k"])) if on]
    click.echo(f"wrote {result['format']} model ({result['bytes']:,} bytes) to {result['out']}; "
               f"{meta['output']['level']}-level {meta['output']['kind']}, reads "
               f"{', '.join(needs) if needs else 'no encodings'}; run it with examples/predict_exported.py")
