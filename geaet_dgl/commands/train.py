"""``geaet-dgl train``: one run, one run per seed, or a resumed run."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

import click

from .node_recipe import choice_at_run_time, recipe_chosen, refuse_existing_out, train_chosen
from .run_folder import claim_out_folder
from .study_report import print_aggregate
from .train_options import TrainOptions
from .options import (ListOptionCommand, allow_changed_data_option, data_source_options, gather_data, given,
                      given_on_command_line, handle_errors, limit_options, parse_settings, retry_failed_option,
                      seeds_option, split_index_option, threads_option)


@click.command(cls=ListOptionCommand)
@click.option("--dataset", help="Dataset to train on: a graph file PATH.bin (dgl.save_graphs), or mnist, cifar10, "
                                "pattern, cluster, zinc, voc, coco, "
                                "peptides-func, peptides-struct, pcqm-contact, tree, synthetic "
                                "(random MNIST-shaped graphs), ogbn-arxiv, ogbn-products, or a named node set "
                                "read by DGL's loaders (cora, citeseer, pubmed, actor, texas, roman-empire, "
                                "wikics, ...; --data-dir is DGL's raw_dir, e.g. ~/.dgl); see `geaet-dgl datasets`. "
                                "Required unless --resume.")
@click.option("--preset", help="Configuration preset (see `geaet-dgl presets`); default: the dataset's own "
                               "(mnist for synthetic).")
@click.option("--config", type=click.Path(dir_okay=False, exists=True), metavar="FILE.yaml",
              help="A reference/GraphGPS config (e.g. GEAET's configs/GEAET/mnist.yaml) instead of --preset; "
                   "--dataset then only replaces its data set (e.g. synthetic). See docs/reference-interop.md.")
@click.option("--epochs", type=click.IntRange(min=1), help="Number of epochs (train.epochs).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch (train.batch_size); on one graph "
                                                                "with node masks, METIS (or random) parts per step "
                                                                "(--sampler), and with --partitions METIS parts per "
                                                                "trainer and step (data.num_parts parts in all).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), help="Base learning rate (train.lr).")
@click.option("--seed", type=int, help="Seed of initialisation, batch order and dropout (train.seed).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), help="Where to train (default cpu).")
@click.option("--workers", type=click.IntRange(min=0), help="DataLoader worker processes (default 0).")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR", help="Run directory; default "
                                                             "runs/<dataset>-<preset>-seed<seed>.")
@data_source_options(from_run=False)
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Override a preset value, e.g. --set model.hidden_dim=64 --set train.lr=5e-4 (repeatable).")
@limit_options
@click.option("--checkpoint-every", type=click.IntRange(min=0), help="Also write last.pt every N training "
                                                                     "steps inside an epoch (default 0: at "
                                                                     "epoch ends only).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True), metavar="RUN_DIR",
              help="Continue the run in RUN_DIR from its last.pt, with its own configuration "
                   "(only --device, --workers, --nproc, --threads, --progress and --allow-changed-data may change).")
@click.option("--overwrite", is_flag=True, help="Replace the run files of an existing run directory.")
@retry_failed_option
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@click.option("--nproc", type=click.IntRange(min=1), default=None,
              help="Data-parallel processes on this machine (DistributedDataParallel: gloo on cpu, nccl on cuda, "
                   "one GPU each); --batch-size is per process. With --resume: default the run's own. "
                   "Under torchrun leave it out.")
@click.option("--sync-bn/--no-sync-bn", "sync_bn", default=True,
              help="Multi-process runs: synchronise BatchNorm statistics over all processes (default on).")
@seeds_option
@split_index_option
@click.option("--splits", "split_list", multiple=True, metavar="all|K [K ...]",
              help="Named node sets: train once per public split (all, or those listed), each in OUT/split<k> "
                   "(with --seeds: OUT/split<k>-seed<s>), then write OUT/aggregate.md and .json: mean ± sample "
                   "std over the splits, as --seeds does.")
@click.option("--data-file", type=click.Path(dir_okay=False), metavar="PATH",
              help="Train on your own graphs: a dgl.save_graphs file (same as --dataset PATH.bin); see "
                   "docs/your-own-graphs.md.")
@click.option("--task", type=click.Choice(["graph-classification", "graph-regression", "node-classification",
                                          "node-regression"]),
              help="Graph files: the task (default: inferred from the labels).")
@click.option("--sampler", type=click.Choice(["full", "cluster", "random"]),
              help="One graph with node masks: train on the full graph every step (default), on --batch-size of "
                   "data.num_parts METIS partitions (cluster), or of data.num_parts random node sets (random); "
                   "set K with --set data.num_parts=K (default: parts of about 1,000 nodes).")
@click.option("--split-file", type=click.Path(dir_okay=False), metavar="PATH",
              help="Graph files: JSON or NPZ with train/val/test lists of graph indices.")
@click.option("--split", "split_fractions", type=click.FloatRange(min=0, min_open=True), nargs=3, default=None,
              metavar="TRAIN VAL TEST", help="Graph files: seeded random split fractions (default 0.8 0.1 0.1; "
                                             "seed: --set data.split_seed=K).")
@click.option("--tensorboard", is_flag=True,
              help="Also write TensorBoard event files (per-epoch metrics, lr, parameter count) to the run "
                   "directory; needs `pip install tensorboard`.")
@click.option("--partitions", type=click.Path(dir_okay=False), metavar="DIR/NAME.json",
              help="Train on the partitions of one graph (`geaet-dgl partition`) with DGL's graph servers and "
                   "--nproc trainers (default: one per partition); each trainer cuts its nodes into METIS parts "
                   "and trains on --batch-size of them per step, as --sampler cluster does in one process; see "
                   "docs/distributed.md.")
@click.option("--ip-config", type=click.Path(dir_okay=False, exists=True), metavar="ip.txt",
              help="With --partitions on several machines: DGL's ip_config, one line 'IP [PORT]' per machine; run "
                   "the same command on every machine with its own --machine.")
@click.option("--machine", type=click.IntRange(min=0), default=None,
              help="With --ip-config: this machine's line of ip.txt, counting from 0.")
@click.option("--dry-run", is_flag=True,
              help="Resolve the configuration and build the model from the dataset's schema without reading "
                   "data: print the parameter count, the settings and the files the run would read, then exit.")
@threads_option
@allow_changed_data_option
@handle_errors
@gather_data
@click.pass_context
def train(ctx: click.Context, **options: Any) -> None:
    """Train GEAET; write checkpoints, metrics, curves and a summary to the run directory.

    Your own graphs: --dataset PATH.bin (a dgl.save_graphs file), preset `geaet` unless --preset; one graph
    with node masks: the node recipe with the best validation metric (--sampler: preset `geaet-node`).

    With --seeds K [K ...]: one run per seed in OUT/seed<k>, and their mean ± std in OUT/aggregate.md.

    Data-parallel: `--nproc N`, or `torchrun --nproc_per_node N cli.py train ...` (see docs/distributed.md).
    """
    opts = TrainOptions(**options)
    _check(opts)
    with claim_out_folder(opts):
        for mode in (_resume_partitioned, _train_partitions, _resume, _dry_run, _evaluate_pretrained, _train_splits,
                     _train_seeds, _train_one):
            if mode(ctx, opts):
                return


def _check(opts: TrainOptions) -> None:
    """Refuse option combinations no mode takes."""
    from geaet_dgl.distgraph import launch as dist_launch
    from geaet_dgl.training.seeds import check_seeds_options, check_splits_options
    from geaet_dgl.training import launcher

    from geaet_dgl.config import OptionConflict

    launcher.check_nproc(opts.nproc)
    check_seeds_options(opts.seeds, nproc=opts.nproc, seed=opts.seed, resume=opts.resume_dir is not None)
    check_splits_options(opts.split_list, nproc=opts.nproc, split_index_given="split_index" in opts.data,
                         resume=opts.resume_dir is not None, partitions=opts.partitions is not None)
    given = {"--dataset": opts.dataset, "--config": opts.config, "--data-file": opts.data.get("data_file"),
             "--seeds": opts.seeds, "--sampler": opts.sampler, "--task": opts.task, "--split": opts.split_fractions,
             "--split-file": opts.split_file}
    dist_launch.check_partition_options(opts.partitions, opts.ip_config, opts.machine, given,
                                        parse_settings(opts.settings))
    if opts.retry_failed and not (opts.seeds or opts.split_list):
        raise OptionConflict("--retry-failed trains again the failed runs of a study (--seeds, --splits); drop it")


def _resume_partitioned(ctx: click.Context, opts: TrainOptions) -> bool:
    """``--resume`` of a run on partitions: its graph servers and trainers again."""
    from geaet_dgl.distgraph import launch as dist_launch
    from geaet_dgl.training import launcher

    if opts.resume_dir is None or dist_launch.partitioned_run(opts.resume_dir) is None:
        return False
    launcher.check_resume_changes(given_on_command_line(ctx, skip=("resume_dir", "debug")))
    _print_partitioned(dist_launch.resume_partitioned(opts.resume_dir), opts.resume_dir)
    return True


def _train_partitions(ctx: click.Context, opts: TrainOptions) -> bool:
    """``--partitions DIR/NAME.json``: DGL's graph servers and ``--nproc`` trainers."""
    from geaet_dgl import training
    from geaet_dgl.distgraph import launch as dist_launch

    if opts.partitions is None:
        return False
    run = dist_launch.partitioned_run_config(opts.partitions, opts.preset, opts.overrides(), opts.threads)
    run.sync_bn = opts.sync_bn
    run.checkpoint_every = opts.checkpoint_every or 0
    run_dir = opts.out or str(training.default_run_dir(run.data.name, run.preset, run.train.seed))
    nproc = opts.nproc or dist_launch.default_nproc(opts.partitions, opts.ip_config)
    summary = dist_launch.train_partitioned(run, run_dir, opts.partitions, nproc, overwrite=opts.overwrite,
                                            ip_config=opts.ip_config, machine=opts.machine or 0)
    _print_partitioned(summary, run_dir)
    return True


def _resume(ctx: click.Context, opts: TrainOptions) -> bool:
    """``--resume RUN_DIR``: continue from its ``last.pt`` with its own configuration."""
    from geaet_dgl.training import launcher

    if opts.resume_dir is None:
        return False
    launcher.check_resume_changes(given_on_command_line(ctx, skip=("resume_dir", "debug")))
    summary = launcher.resume_job(opts.resume_dir, nproc=opts.nproc, device=opts.device, workers=opts.workers,
                                  progress=opts.progress, threads=opts.threads,
                                  allow_changed_data=opts.allow_changed_data)
    if summary is not None:  # None on the ranks other than 0 under torchrun
        print_summary(summary, opts.resume_dir)
    return True


def _new_run(opts: TrainOptions, preset: Optional[str] = None) -> Any:
    """A new run's configuration: a preset (``preset``, else --preset; or a reference config), options applied."""
    from geaet_dgl.config import check_run_source
    from geaet_dgl.training import make_run_config
    check_run_source(opts.dataset, opts.data.get("data_file"), opts.config, opts.preset, opts.allow_changed_data)
    data = dict(opts.data, **given(task=opts.task, split_file=opts.split_file, sampler=opts.sampler,
                                   split=list(opts.split_fractions) if opts.split_fractions else None))
    run_settings = dict(device=opts.device or "cpu", workers=opts.workers or 0,
                        checkpoint_every=opts.checkpoint_every or 0, threads=opts.threads, sync_bn=opts.sync_bn,
                        tensorboard=opts.tensorboard)
    if opts.config is not None:
        from geaet_dgl.interop.reference_yaml import reference_run_config

        return reference_run_config(opts.config, opts.overrides(), {**data, **given(dataset=opts.dataset)},
                                    **run_settings)
    return make_run_config(opts.dataset, preset or opts.preset, opts.overrides(), data, **run_settings)


def _dry_run(ctx: click.Context, opts: TrainOptions) -> bool:
    """``--dry-run``: print what the run would build and read; read no data."""
    if not opts.dry_run:
        return False
    from .dry_run import print_dry_run

    run = _new_run(opts)
    print_dry_run(run, opts.config, opts.split_list, opts.seeds)
    click.echo(choice_at_run_time(opts, run) or "", nl=False)
    return True


def _evaluate_pretrained(ctx: click.Context, opts: TrainOptions) -> bool:
    """A GraphGPS ``*-inference.yaml`` (``pretrained.dir``, ``train.mode: inference-only``): import and score it."""
    from .pretrained import evaluate_pretrained_folder, inference_only_file

    if opts.config is None or not inference_only_file(opts.config):
        return False
    _new_run(opts)  # the file and the options checked as for training (--config with --preset, ...)
    evaluate_pretrained_folder(opts)
    return True


def _train_splits(ctx: click.Context, opts: TrainOptions) -> bool:
    """``--splits all|K...`` (a named node set): one run per public split, and their mean ± std."""
    from geaet_dgl import training
    from geaet_dgl.training.seeds import label_dir, run_split_indices, run_splits

    if not opts.split_list:
        return False
    run = _new_run(opts)
    splits = run_split_indices(opts.split_list, run)
    out = opts.out or str(training.run_dir.default_splits_dir(run.data.dataset, run.preset))
    agg = run_splits(run, splits, out, seeds=list(opts.seeds) or None, overwrite=opts.overwrite,
                     progress=opts.progress, on_run=lambda label, summary: print_summary(summary,
                                                                                          str(label_dir(out, label))),
                     retry_failed=opts.retry_failed)
    print_aggregate(agg, f"{agg['n']} runs on splits {sorted(set(agg['splits']))}", out)
    return True


def _train_seeds(ctx: click.Context, opts: TrainOptions) -> bool:
    """``--seeds K [K ...]``: one run per seed in OUT/seed<k>, and their mean ± std."""
    from geaet_dgl import training
    from geaet_dgl.training.seeds import run_seeds

    if not opts.seeds:
        return False
    run, choice = recipe_chosen(opts, _new_run(opts), lambda preset: _new_run(opts, preset))
    if choice is not None:
        choice.discard()
    out = opts.out or str(training.run_dir.default_seeds_dir(run.data.name, run.preset))
    agg = run_seeds(run, list(opts.seeds), out, overwrite=opts.overwrite, progress=opts.progress,
                    on_seed=lambda k, summary: print_summary(summary, f"{out}/seed{k}"),
                    retry_failed=opts.retry_failed)
    print_aggregate(agg, f"{agg['n']} seeds {agg['seeds']}", out)
    return True


def _train_one(ctx: click.Context, opts: TrainOptions) -> bool:
    """One new run (``--nproc N`` data-parallel processes, or torchrun's)."""
    from geaet_dgl import training
    from geaet_dgl.training import launcher

    refuse_existing_out(opts)
    run, choice = recipe_chosen(opts, _new_run(opts), lambda preset: _new_run(opts, preset),
                                workdir=os.path.dirname(os.path.abspath(opts.out or "runs/run")))
    run_dir = opts.out or str(training.default_run_dir(run.data.name, run.preset, run.train.seed))
    from .pretrained import fine_tune_from_pretrained_folder

    fine_tune_from_pretrained_folder(opts, run, run_dir)
    summary = train_chosen(run, choice, run_dir, opts.overwrite, lambda: launcher.train_job(
        run, run_dir, nproc=opts.nproc or 1, overwrite=opts.overwrite, progress=opts.progress))
    if summary is not None:  # None on the ranks other than 0 under torchrun
        print_summary(summary, run_dir)
    return True


def _print_partitioned(summary: Optional[Dict[str, Any]], run_dir: str) -> None:
    if summary is None:  # machines other than trainer 0's
        click.echo("this machine's server and trainers finished; trainer 0's machine wrote the run directory")
        return
    print_summary(summary, run_dir)
    from geaet_dgl.distgraph.launch import partitioned_summary_line
    click.echo(partitioned_summary_line(summary))


def print_summary(summary: Dict[str, Any], run_dir: str) -> None:
    """The one line a finished run prints."""
    click.echo(f"best epoch {summary['best_epoch']}/{summary['epochs']}: val {summary['metric_name']} "
               f"{summary['val_metric']:.6f}, test {summary['test_metric']:.6f} "
               f"({summary['params']:,} parameters, {summary['seconds_per_epoch']:.1f} s/epoch); "
               f"run directory {run_dir}")
