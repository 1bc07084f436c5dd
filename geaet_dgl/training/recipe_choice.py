"""Which node recipe a graph file gets when no preset was named: a selection on validation nodes only.

No one recipe is best on every node graph: on citation graphs a GCN-like network wins, where an MLP beats GCN
(WebKB, Actor) the neighbours mislead and the node's own features must come first, and on graphs such as
minesweeper or chameleon the neighbours carry the label but unlike the node itself (ego / neighbour separation,
residuals, longer training). So a graph file with node masks trained without ``--preset`` (full graph, one
process) trains each candidate recipe (:data:`CANDIDATES`, each with its own schedule and early stopping) and keeps
the one with the best validation metric; ties keep the earlier candidate (the cheaper). The test nodes are never
read for the choice. One log line says what was chosen and why, with each candidate's validation metric and the
adjusted label homophily of the edges between training and validation nodes
(:mod:`geaet_dgl.data.nodes.homophily`).

A graph of more than :data:`MAX_PROBE_NODES` nodes is not probed: it gets ``node-homophilous`` when that
homophily is at least :data:`HOMOPHILOUS_AT`, else ``node-heterophilous``.

Example
-------
>>> from geaet_dgl.config.presets import NODE_RECIPE_PRESETS
>>> set(CANDIDATES) <= set(NODE_RECIPE_PRESETS)
True
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Union

import dgl

from ..config import RunConfig
from ..data.nodes.homophily import adjusted_homophily
from . import run_dir as files
from .metrics import get_metric, is_improvement
from .trainer import NonFiniteLossError, train

log = logging.getLogger(__name__)
PathLike = Union[str, os.PathLike]

#: The recipes tried, in order of cost (a tie keeps the earlier): GCN-like, GCN-like with APPNP's propagation
#: branch, ego / neighbour hops, then the residual stack with ego / neighbour separation
#: (docs/node-classification.md#recipe).
CANDIDATES = ("node-homophilous", "node-propagation", "node-ego-neighbours", "node-heterophilous")
#: Graphs with more nodes are not probed (each probe is a whole training run): the homophily rule decides.
MAX_PROBE_NODES = 100_000
#: Adjusted homophily from which a graph too large to probe counts as homophilous (Cora 0.77, CiteSeer 0.67,
#: the Amazon and Coauthor graphs 0.68-0.87; the heterophilous benchmarks -0.3 to 0.15).
HOMOPHILOUS_AT = 0.5


@dataclass
class RecipeChoice:
    """The chosen preset, why (one line), each candidate's validation metric, and their finished run folders
    (under the choice's work folder, removed by :meth:`discard`)."""

    preset: str
    reason: str
    scores: Dict[str, float] = field(default_factory=dict)
    homophily: Optional[float] = None
    runs: Dict[str, Path] = field(default_factory=dict)
    workdir: Optional[Path] = None

    def take_run(self, run_dir: PathLike) -> bool:
        """Move the chosen candidate's finished run to ``run_dir`` (which must not exist); False when there is
        none to move (not probed) or ``run_dir`` exists."""
        source = self.runs.get(self.preset)
        if source is None or not source.is_dir() or Path(run_dir).exists():
            return False
        Path(run_dir).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(source, run_dir)
        except OSError:  # another file system: the run is trained again instead
            return False
        return True

    def run_into(self, run_dir: PathLike, overwrite: bool, train_again: Callable[[], Optional[Dict[str, Any]]]
                 ) -> Optional[Dict[str, Any]]:
        """The summary of the chosen run in ``run_dir``: the candidate's finished run moved there (after the run
        files of an existing ``run_dir`` are removed, with ``overwrite``), else ``train_again()``; the candidates'
        folder is removed either way."""
        try:
            if overwrite and Path(run_dir).is_dir():
                files.prepare_new_run_dir(run_dir, overwrite=True)  # the run files go, so the chosen run moves in
                if not any(Path(run_dir).iterdir()):
                    Path(run_dir).rmdir()
            if self.take_run(run_dir):
                return json.loads((Path(run_dir) / files.SUMMARY).read_text())
            return train_again()
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the work folder with the runs not taken."""
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def graph_homophily(path: PathLike) -> tuple:
    """(adjusted homophily over the edges between training and validation nodes or None, number of nodes) of
    the one graph in the file ``path``."""
    graph = dgl.load_graphs(os.fspath(path))[0][0]
    if graph.is_homogeneous and "label" in graph.ndata and graph.ndata["label"].ndim == 1 and \
            not graph.ndata["label"].is_floating_point():
        known = graph.ndata["train_mask"].bool() | graph.ndata["val_mask"].bool()
        return adjusted_homophily(graph, graph.ndata["label"], known), graph.num_nodes()
    return None, graph.num_nodes()


def choose_node_recipe(path: PathLike, make_run: Callable[[str], RunConfig], workdir: Optional[PathLike] = None,
                       candidates: Sequence[str] = CANDIDATES) -> RecipeChoice:
    """Choose the recipe for the graph file ``path`` (module docstring).

    ``make_run(preset)`` builds the run a candidate would train (the user's overrides applied). The candidates'
    runs go to a new folder under ``workdir`` (default: the system's temporary folder); the caller moves the
    chosen one into place (:meth:`RecipeChoice.take_run`) and discards the rest (:meth:`RecipeChoice.discard`).
    """
    homophily, num_nodes = graph_homophily(path)
    shown = "n/a" if homophily is None else f"{homophily:.2f}"
    if num_nodes > MAX_PROBE_NODES:
        preset = "node-homophilous" if homophily is not None and homophily >= HOMOPHILOUS_AT else "node-heterophilous"
        reason = (f"recipe {preset}: adjusted label homophily of the training and validation nodes' edges {shown} "
                  f"({'>=' if preset == 'node-homophilous' else '<'} {HOMOPHILOUS_AT}; {num_nodes:,} nodes, over "
                  f"{MAX_PROBE_NODES:,}: not probed); --preset names another")
        log.info(reason)
        return RecipeChoice(preset, reason, homophily=homophily)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".geaet-recipes-", dir=os.fspath(workdir) if workdir else None))
    choice = RecipeChoice(candidates[0], "", homophily=homophily, workdir=folder)
    metric = None
    try:
        with _console_quiet():
            for number, preset in enumerate(candidates, start=1):
                run = make_run(preset)
                metric = run.train.metric
                log.info("recipe %s: training it to compare on the validation nodes (%d of %d)", preset, number,
                         len(candidates))
                try:
                    summary = train(run, folder / preset, progress=False)
                except NonFiniteLossError as exc:  # a recipe that diverges here is not chosen; the others go on
                    log.warning("recipe %s diverged (%s): left out of the choice", preset, exc)
                    continue
                choice.scores[preset] = float(summary["val_metric"])
                choice.runs[preset] = folder / preset
        if not choice.scores:
            raise NonFiniteLossError(f"every candidate recipe diverged on {path}; name one with --preset and a "
                                     "lower --lr")
    except BaseException:
        choice.discard()
        raise
    best = None
    for preset in choice.scores:  # strict improvement: a tie keeps the earlier (cheaper) candidate
        if is_improvement(metric, choice.scores[preset], None if best is None else choice.scores[best]):
            best = preset
    choice.preset = best
    others = ", ".join(f"{name} {value:.4f}" for name, value in choice.scores.items() if name != best)
    direction = "highest" if get_metric(metric).higher_is_better else "lowest"
    choice.reason = (f"recipe {best}: the {direction} validation {metric} ({choice.scores[best]:.4f}; {others}); "
                     f"adjusted label homophily of the training and validation nodes' edges {shown}; "
                     "--preset names another")
    log.info(choice.reason)
    return choice


class _ChoiceLinesOnly(logging.Filter):
    """Lets through this module's records and warnings: the candidates' epoch lines stay in their train.log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name == __name__


@contextlib.contextmanager
def _console_quiet() -> Iterator[None]:
    """While the candidates train, the package's console handlers show only the choice's own lines."""
    only_choice = _ChoiceLinesOnly()
    handlers = [h for h in logging.getLogger("geaet_dgl").handlers if not isinstance(h, logging.FileHandler)]
    for handler in handlers:
        handler.addFilter(only_choice)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(only_choice)
