"""``geaet-dgl train`` on a graph file with node masks and no --preset: the node recipe chosen on validation.

The choice itself is :mod:`geaet_dgl.training.recipe_choice`; here is when the command asks for it and how the
chosen candidate's finished run becomes the run the user named (moved into place, not trained again).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional, Tuple


def choice_applies(opts: Any, run: Any) -> bool:
    """Whether ``train`` chooses the node recipe on validation for this run: a graph file with node masks, no
    --preset or --config, the full graph, one process."""
    from geaet_dgl.training import NODE_GRAPH_PRESET

    return opts.preset is None and opts.config is None and run.preset == NODE_GRAPH_PRESET and \
        run.data.sampler == "full" and (opts.nproc or 1) <= 1


def choice_at_run_time(opts: Any, run: Any) -> Optional[str]:
    """The line ``--dry-run`` adds when the recipe is chosen at run time (its own settings are ``geaet-node``'s,
    which it shows), else None."""
    if not choice_applies(opts, run):
        return None
    from geaet_dgl.training.recipe_choice import CANDIDATES

    return (f"recipe: chosen when the run starts, on the validation nodes, among {', '.join(CANDIDATES)} (each "
            "trained; the best kept); the settings above are geaet-node's; --preset trains one recipe\n")


def recipe_chosen(opts: Any, run: Any, new_run: Callable[[str], Any],
                  workdir: Optional[str] = None) -> Tuple[Any, Any]:
    """(the run, the :class:`~geaet_dgl.training.recipe_choice.RecipeChoice` or None): a graph file with node
    masks trained without --preset on the full graph by one process gets the node recipe with the best validation
    metric (docs/node-classification.md#the-default-for-your-own-graph); any other run is returned as it is.
    ``new_run(preset)`` resolves the command's run with that preset."""
    if not choice_applies(opts, run):
        return run, None
    from geaet_dgl.training.recipe_choice import choose_node_recipe

    choice = choose_node_recipe(run.data.data_file, new_run, workdir=workdir)
    return new_run(choice.preset), choice


def train_chosen(run: Any, choice: Any, run_dir: str, overwrite: bool,
                 train_job: Callable[[], Optional[Dict[str, Any]]]) -> Optional[Dict[str, Any]]:
    """The summary of ``run`` in ``run_dir``: ``train_job()``, or with a ``choice`` its chosen run moved there
    (:meth:`~geaet_dgl.training.recipe_choice.RecipeChoice.run_into`)."""
    return train_job() if choice is None else choice.run_into(run_dir, overwrite, train_job)


def refuse_existing_out(opts: Any) -> None:
    """An existing --out is refused (without --overwrite) before any candidate recipe is trained."""
    from geaet_dgl.training.run_dir import prepare_new_run_dir

    if opts.out is not None and os.path.exists(opts.out) and not opts.overwrite:
        prepare_new_run_dir(opts.out, overwrite=False)
