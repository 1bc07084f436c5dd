"""``geaet-dgl train``: one run, one run per seed, or a resumed run."""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import click

from .options import (ListOptionCommand, allow_changed_data_option, data_source_options, gather_data, given,
                      given_on_command_line, handle_errors, limit_options, parse_settings, seeds_option, threads_option)


@click.command(cls=ListOptionCommand)
@click.option("--dataset", help="Dataset to train on: a graph file PATH.bin (dgl.save_graphs), or mnist, cifar10, "
                                "pattern, cluster, zinc, voc, coco, "
                                "peptides-func, peptides-struct, pcqm-contact, tree, or synthetic "
                                "(random MNIST-shaped graphs); see `geaet-dgl datasets`. Required unless --resume.")
@click.option("--preset", help="Configuration preset (see `geaet-dgl presets`); default: the dataset's own "
                               "(mnist for synthetic).")
@click.option("--config", type=click.Path(dir_okay=False, exists=True), metavar="FILE.yaml",
              help="A reference/GraphGPS config (e.g. GEAET's configs/GEAET/mnist.yaml) instead of --preset; "
                   "--dataset then only replaces its data set (e.g. synthetic). See docs/reference-interop.md.")
@click.option("--epochs", type=click.IntRange(min=1), help="Number of epochs (train.epochs).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch (train.batch_size); on one graph "
                                                                "with node masks, parts per step (--sampler).")
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
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@click.option("--nproc", type=click.IntRange(min=1), default=None,
              help="Data-parallel processes on this machine (DistributedDataParallel: gloo on cpu, nccl on cuda, "
                   "one GPU each); --batch-size is per process. With --resume: default the run's own. "
                   "Under torchrun leave it out.")
@click.option("--sync-bn/--no-sync-bn", "sync_bn", default=True,
              help="Multi-process runs: synchronise BatchNorm statistics over all processes (default on).")
@seeds_option
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
                   "--nproc trainers (default: one per partition); see docs/distributed.md.")
@click.option("--ip-config", type=click.Path(dir_okay=False, exists=True), metavar="ip.txt",
              help="With --partitions on several machines: DGL's ip_config, one line 'IP [PORT]' per machine; run "
                   "the same command on every machine with its own --machine.")
@click.option("--machine", type=click.IntRange(min=0), default=None,
              help="With --ip-config: this machine's line of ip.txt, counting from 0.")
@threads_option
@allow_changed_data_option
@handle_errors
@gather_data
@click.pass_context
def train(ctx: click.Context, dataset: Optional[str], preset: Optional[str], config: Optional[str],
          epochs: Optional[int], batch_size: Optional[int], lr: Optional[float], seed: Optional[int],
          device: Optional[str], workers: Optional[int], out: Optional[str], data: Dict[str, Any],
          settings: Tuple[str, ...], checkpoint_every: Optional[int], resume_dir: Optional[str], overwrite: bool,
          progress: bool, nproc: Optional[int], sync_bn: bool, seeds: Tuple[int, ...], task: Optional[str],
          split_file: Optional[str], split_fractions: Optional[Tuple[float, ...]], tensorboard: bool,
          partitions: Optional[str], ip_config: Optional[str], machine: Optional[int],
          threads: Optional[int], allow_changed_data: bool, sampler: Optional[str]) -> None:
    """Train GEAET; write checkpoints, metrics, curves and a summary to the run directory.

    Your own graphs: --dataset PATH.bin (a dgl.save_graphs file), preset `geaet` unless --preset; one graph
    with train/val/test node masks: preset `geaet-node`, --sampler to cut it into batches.

    With --seeds K [K ...]: one run per seed in OUT/seed<k>, and their mean ± std in OUT/aggregate.md.

    Data-parallel: `--nproc N`, or `torchrun --nproc_per_node N cli.py train ...` (see docs/distributed.md).
    """
    from geaet_dgl import training
    from geaet_dgl.config import settings_with_options
    from geaet_dgl.studies.seeds import check_seeds_options
    from geaet_dgl.distgraph import launch as dist_launch
    from geaet_dgl.training import launcher

    launcher.check_nproc(nproc)
    check_seeds_options(seeds, nproc=nproc, seed=seed, resume=resume_dir is not None)
    dist_launch.check_partition_options(partitions, ip_config, machine, dataset=dataset, config=config,
                                        data_file=data.get("data_file"), seeds=seeds, sampler=sampler, task=task,
                                        split_file=split_file, split=split_fractions,
                                        settings=parse_settings(settings))
    if resume_dir is not None and dist_launch.partitioned_run(resume_dir) is not None:
        launcher.check_resume_changes(given_on_command_line(ctx, skip=("resume_dir", "debug")))
        _print_partitioned(dist_launch.resume_partitioned(resume_dir), resume_dir)
        return
    if partitions is not None:
        _train_partitions(partitions, preset, settings_with_options(parse_settings(settings), epochs=epochs,
                                                                    batch_size=batch_size, lr=lr, seed=seed),
                          out, nproc, overwrite, sync_bn, threads, ip_config, machine)
        return
    if resume_dir is not None:
        launcher.check_resume_changes(given_on_command_line(ctx, skip=("resume_dir", "debug")))
        summary = launcher.resume_job(resume_dir, nproc=nproc, device=device, workers=workers, progress=progress,
                                      threads=threads, allow_changed_data=allow_changed_data)
        if summary is not None:  # None on the ranks other than 0 under torchrun
            print_summary(summary, resume_dir)
        return
    training.run_config.check_run_source(dataset, data.get("data_file"), config, preset, allow_changed_data)
    overrides = settings_with_options(parse_settings(settings), epochs=epochs, batch_size=batch_size, lr=lr,
                                      seed=seed)
    data.update(given(task=task, split_file=split_file, split=list(split_fractions) if split_fractions else None,
                      sampler=sampler))
    run_settings = dict(device=device or "cpu", workers=workers or 0, checkpoint_every=checkpoint_every or 0,
                        threads=threads, sync_bn=sync_bn, tensorboard=tensorboard)
    if config is not None:
        from geaet_dgl.interop import reference_run_config

        run = reference_run_config(config, overrides, {**data, **given(dataset=dataset)}, **run_settings)
    else:
        run = training.make_run_config(dataset, preset, overrides, data, **run_settings)
    if seeds:
        _train_seeds(run, list(seeds), out or str(training.run_dir.default_seeds_dir(run.data.name, run.preset)),
                     overwrite, progress)
        return
    run_dir = out or str(training.default_run_dir(run.data.name, run.preset, run.train.seed))
    summary = launcher.train_job(run, run_dir, nproc=nproc or 1, overwrite=overwrite, progress=progress)
    if summary is not None:  # None on the ranks other than 0 under torchrun
        print_summary(summary, run_dir)


def _train_partitions(partitions: str, preset: Optional[str], overrides: Dict[str, Any], out: Optional[str],
                      nproc: Optional[int], overwrite: bool, sync_bn: bool, threads: Optional[int],
                      ip_config: Optional[str], machine: Optional[int]) -> None:
    from geaet_dgl import training
    from geaet_dgl.distgraph import launch as dist_launch

    run = dist_launch.partitioned_run_config(partitions, preset, overrides, threads)
    run.sync_bn = sync_bn
    run_dir = out or str(training.default_run_dir(run.data.name, run.preset, run.train.seed))
    summary = dist_launch.train_partitioned(run, run_dir, partitions, nproc or dist_launch.default_nproc(partitions,
                                                                                                       ip_config),
                                            overwrite=overwrite, ip_config=ip_config, machine=machine or 0)
    _print_partitioned(summary, run_dir)


def _print_partitioned(summary: Optional[Dict[str, Any]], run_dir: str) -> None:
    if summary is None:  # machines other than trainer 0's
        click.echo("this machine's server and trainers finished; trainer 0's machine wrote the run directory")
        return
    print_summary(summary, run_dir)
    click.echo(f"best.pt on the whole graph: val {summary['metric_name']} {summary['full_graph_val_metric']:.6f}, "
               f"test {summary['full_graph_test_metric']:.6f}; peak memory (MiB) "
               + ", ".join(f"{name} {mib:.0f}" for name, mib in summary.get("peak_rss_mib", {}).items()))


def _train_seeds(run: Any, seeds: list, out: str, overwrite: bool, progress: bool) -> None:
    from geaet_dgl.studies import format_mean_std, run_seeds
    from geaet_dgl.studies.seeds import AGGREGATE_MD

    agg = run_seeds(run, seeds, out, overwrite=overwrite, progress=progress,
                    on_seed=lambda k, summary: print_summary(summary, f"{out}/seed{k}"))
    metric = agg["metric_name"]
    click.echo(f"{agg['n']} seeds {agg['seeds']}, {agg['std']}:")
    for name in ("val_metric", "test_metric"):
        stat = agg[name]
        click.echo(f"  {name.split('_')[0]} {metric}: {format_mean_std(stat['mean'], stat['std'])}")
    click.echo(f"table in {out}/{AGGREGATE_MD} (and aggregate.json)")


def print_summary(summary: Dict[str, Any], run_dir: str) -> None:
    """The one line a finished run prints."""
    click.echo(f"best epoch {summary['best_epoch']}/{summary['epochs']}: val {summary['metric_name']} "
               f"{summary['val_metric']:.6f}, test {summary['test_metric']:.6f} "
               f"({summary['params']:,} parameters, {summary['seconds_per_epoch']:.1f} s/epoch); "
               f"run directory {run_dir}")
