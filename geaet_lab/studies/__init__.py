"""The paper's studies as library calls: seeds with mean ± std, sweeps/ablations, attention maps.

``run_seeds(run, seeds, out)``
    One training per seed in ``out/seed<k>`` (finished seeds are skipped,
    interrupted ones resumed), then ``out/aggregate.md`` / ``aggregate.json``:
    mean ± sample standard deviation (ddof=1, as the paper's ±) of the
    metrics at each seed's best-validation epoch.
``run_sweep(SweepJob(dataset, preset, settings, seeds, out, ...))``
    The cartesian product of comma-separated ``--set`` values, each point over
    seeds, as one table (``out/sweep.md`` / ``sweep.json``) with parameter
    counts, like the paper's Tables 6, 7 and 9.
``attention_maps(checkpoint, graphs, split, out)``
    Per-node GEANet external attention and received self-attention of chosen
    graphs, drawn on the graph (PNG) and written as JSON.
"""
from geaet_dgl.training.aggregate import AGGREGATED_FIELDS, STD_NOTE, aggregate_summaries, format_mean_std, mean_std
from .attention import attention_maps, geanet_node_score, received_self_attention
from geaet_dgl.training.seeds import run_seeds
from .sweep import SweepJob, SweepPoint, expand_sweep, parse_sweep_settings, run_sweep

__all__ = [
    "AGGREGATED_FIELDS", "STD_NOTE", "aggregate_summaries", "format_mean_std", "mean_std",
    "attention_maps", "geanet_node_score", "received_self_attention", "run_seeds",
    "SweepJob", "SweepPoint", "expand_sweep", "parse_sweep_settings", "run_sweep",
]
