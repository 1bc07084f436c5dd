"""``geaet-dgl predict``: a trained checkpoint's outputs for new graphs."""
from __future__ import annotations

import click

from .options import device_option, handle_errors


@click.command()
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False),
              help="A best.pt or last.pt of a run (any dataset, named or a graph file).")
@click.option("--graphs", "graphs_path", required=True, type=click.Path(dir_okay=False), metavar="NEW.bin",
              help="The graphs to predict: a dgl.save_graphs file with the features the run trained on.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), metavar="PATH",
              help="Where the predictions go (CSV: one row per graph, or per node for node-level models).")
@click.option("--json", "as_json", is_flag=True, help="Write JSON lines instead of CSV.")
@click.option("--nodes", type=click.Choice(["train", "val", "test"]),
              help="One graph with node masks: only the rows of the nodes in that mask (default every node).")
@click.option("--allow-changed-data", is_flag=True,
              help="With --nodes on the run's own graph file changed since training: read its masks as they are "
                   "now (logged) instead of refusing.")
@device_option("predict")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@handle_errors
def predict(checkpoint: str, graphs_path: str, out: str, as_json: bool, nodes: str, allow_changed_data: bool,
            device: str, progress: bool) -> None:
    """Predict new graphs with a trained checkpoint: class and probabilities, or regressed values.

    Graphs are batched as the run evaluated (its train.batch_size, reported); with GEANet in batch scope a
    graph's output depends on its batch-mates, in graph scope (preset geaet) it does not. A node-level model on
    a file of one graph scores every node with the whole graph as context (layer by layer when it is large).
    """
    from geaet_dgl.scoring import predict_file

    result = predict_file(checkpoint, graphs_path, out, as_json=as_json, device=device, progress=progress,
                          nodes=nodes, allow_changed_data=allow_changed_data)
    per = "node" if result["level"] == "node" else "graph"
    scope = {"batch": "GEANet batch scope: outputs depend on batch-mates",
             "graph": "GEANet graph scope: each graph independent"}.get(result["scope"], "no GEANet")
    if result["whole_graph"]:
        click.echo(f"wrote {result['rows']} rows (one per node, {result['kind']}) to {result['out']}; every node "
                   "scored with its whole graph as context")
        return
    click.echo(f"wrote {result['rows']} rows (one per {per}, {result['graphs']} graphs, {result['kind']}) to "
               f"{result['out']}; batches of {result['batch_size']} graphs as the run trained ({scope})")
