"""Evaluation metrics of the GEAET benchmarks, computed over a whole split.

Each metric is a plain function of two tensors and returns a Python float.
Classification metrics read predicted labels (see :func:`predicted_labels`),
the others read the raw model output. The definitions are the reference's
(GraphGPS' ``CustomLogger``), and libraries compute them, imported when first
used (scikit-learn takes a second): scikit-learn's per-label F1 and recall
(macro F1; Benchmarking GNNs' ``accuracy_SBM``) and precision-recall curve
(average precision, OGB's ``eval_ap``), SciPy's Mann-Whitney U (ROC-AUC with
tied ranks, OGB's ``eval_rocauc``), and OGB's ``Evaluator`` itself for
ogbg-code2's F1. The means over labels and thresholds are summed by torch in
float64, as before these metrics came from the libraries, so runs log the same
values bit for bit.

Written here is only what no library computes: the link ranking metrics
(Hits@k, MRR) of GraphGPS's ``inductive_edge`` head, where each positive is
ranked among its own set of candidates (OGB's ``_eval_mrr`` needs the same
number of negatives for every positive; see :func:`link_ranking_table`).

Example
-------
>>> import torch
>>> accuracy(torch.tensor([0, 1, 1]), torch.tensor([0, 1, 0]))
0.6666666666666666
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import numpy as np
import torch


def predicted_labels(output: torch.Tensor) -> torch.Tensor:
    """Model output -> (N,) int64 class labels.

    (N, C) logits with C > 1 give ``argmax``; a single logit per item, shape
    (N,) or (N, 1), gives ``sigmoid(logit) > 0.5`` (graphgym's threshold).
    """
    if output.ndim == 2 and output.shape[1] > 1:
        return output.argmax(dim=-1)
    return (torch.sigmoid(output.reshape(-1)) > 0.5).long()


def accuracy(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Fraction of correct labels, sklearn's ``accuracy_score``: ``mean(pred == target)``; (N,), (N,) -> float."""
    _check_same_length(pred, target)
    return (pred.reshape(-1) == target.reshape(-1)).double().mean().item()


def balanced_accuracy(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Class-averaged recall, Benchmarking GNNs' ``accuracy_SBM`` (PATTERN, CLUSTER).

    .. math:: \\frac{1}{K} \\sum_{c=0}^{K-1} \\frac{|\\{i : p_i = c = t_i\\}|}{|\\{i : t_i = c\\}|}

    K is the number of distinct labels in ``target`` and ``pred`` together; a
    class that only occurs among the predictions scores 0 but still counts in
    K (as the benchmark's confusion-matrix code does): sklearn's ``recall_score``
    macro-averaged over those labels, with ``zero_division=0``. (sklearn's
    ``balanced_accuracy_score`` would leave such a class out.)

    Parameters
    ----------
    pred, target : (N,) int64
    """
    from sklearn import metrics as sklearn_metrics

    target, pred, labels = _labels(pred, target)
    return _mean(sklearn_metrics.recall_score(target, pred, labels=labels, average=None, zero_division=0))


def mae(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Mean absolute error over every entry: (N, T) or (N,), same shape -> float."""
    if pred.numel() != target.numel():
        raise ValueError(f"mae needs outputs and targets of the same size, got {tuple(pred.shape)} "
                         f"and {tuple(target.shape)}")
    return (pred.reshape(-1).double() - target.reshape(-1).double()).abs().mean().item()


def average_precision(scores: torch.Tensor, target: torch.Tensor) -> float:
    """Multi-label average precision, OGB's ``eval_ap`` (Peptides-Func).

    Per label column with at least one positive and one negative, NaN targets
    left out: sklearn's average precision, :math:`AP = \\sum_k (R_k - R_{k-1}) P_k`
    over the points of sklearn's ``precision_recall_curve`` (one per distinct
    score, tied scores one threshold) in decreasing order of the threshold;
    then the mean over those columns.

    Parameters
    ----------
    scores : (N, T) float, any monotone score (logits or probabilities)
    target : (N, T) float in {0, 1}, NaN where unlabelled
    """
    scores, target = _as_columns(scores), _as_columns(target)
    if scores.shape != target.shape:
        raise ValueError(f"average_precision needs scores and targets of one shape, got "
                         f"{tuple(scores.shape)} and {tuple(target.shape)}")
    per_label = []
    for col in range(target.shape[1]):
        labelled = ~torch.isnan(target[:, col])
        y, s = target[labelled, col], scores[labelled, col]
        if (y == 1).any() and (y == 0).any():
            per_label.append(_binary_average_precision(s.double(), y.double()))
    if not per_label:
        raise ValueError("average_precision needs a label column with both positives and negatives")
    return sum(per_label) / len(per_label)


#: The OGB dataset whose ``Evaluator`` computes each OGB metric (OGB's metric code does not depend on the dataset
#: beyond its task count, which is set to the data's).
_OGB_EVALUATORS = {"rocauc": "ogbg-molhiv", "ap": "ogbg-molpcba", "acc": "ogbg-ppa", "F1": "ogbg-code2"}


def ogb_evaluate(metric: str, input_dict: dict, num_tasks: int = 1) -> float:
    """``ogb.graphproppred.Evaluator(...).eval(input_dict)[metric]`` for ``num_tasks`` label columns.

    ``metric`` is OGB's name (``'rocauc'``, ``'ap'``, ``'acc'``, ``'F1'``);
    the evaluator is that of the OGB dataset using it, with ``num_tasks`` set
    to the data's (the only dataset-specific check OGB's code makes).
    """
    from ogb.graphproppred import Evaluator

    evaluator = Evaluator(_OGB_EVALUATORS[metric])
    evaluator.num_tasks = num_tasks
    return float(evaluator.eval(input_dict)[metric])


def roc_auc(scores: torch.Tensor, target: torch.Tensor) -> float:
    """Area under the ROC curve: the probability that a random positive scores above a random negative,
    ties counted half (sklearn's ``roc_auc_score``, per label column as OGB's ``eval_rocauc``).

    With average ranks :math:`r_i` (1-based) of the scores, this is the
    Mann-Whitney :math:`U / (P Q) = (\\sum_{i: t_i = 1} r_i - P (P + 1) / 2) / (P Q)`
    for ``P`` positives and ``Q`` negatives.

    * One binary task (minesweeper, tolokers, questions, ogbg-molhiv): ``target`` (N,) in {0, 1};
      ``scores`` (N, 2) logits (the score is ``logit_1 - logit_0``), or (N,) / (N, 1) one logit per item.
      NaN when a class is absent (undefined).
    * Several tasks with missing labels (ogbg-molpcba-like): ``target`` (N, T) in {0, 1} or NaN where
      unlabelled, ``scores`` (N, T): the mean over the columns that have both classes, as OGB's
      ``Evaluator`` computes it; a ValueError if none has.
    """
    if target.ndim == 2 and target.shape[1] > 1:
        scores, target = _as_columns(scores).double(), _as_columns(target).double()
        if scores.shape != target.shape:
            raise ValueError(f"roc_auc needs scores and targets of one shape, got {tuple(scores.shape)} and "
                             f"{tuple(target.shape)}")
        per_label = [_binary_roc_auc(scores[labelled, col], target[labelled, col])
                     for col in range(target.shape[1])
                     for labelled in [~torch.isnan(target[:, col])]]
        per_label = [value for value in per_label if not math.isnan(value)]
        if not per_label:
            raise ValueError("roc_auc needs a label column with both positives and negatives")
        return sum(per_label) / len(per_label)
    if scores.ndim == 2 and scores.shape[1] == 2:
        scores = scores[:, 1] - scores[:, 0]
    elif scores.ndim == 2 and scores.shape[1] != 1:
        raise ValueError(f"roc_auc is for binary tasks: got {scores.shape[1]} scores per item")
    scores, target = scores.reshape(-1).double(), target.reshape(-1)
    _check_same_length(scores, target)
    return _binary_roc_auc(scores, target)


def _binary_roc_auc(scores: torch.Tensor, target: torch.Tensor) -> float:
    """(N,) float64 scores, (N,) {0, 1} targets -> AUC, NaN when a class is absent.

    The AUC is the Mann-Whitney U statistic of the positives' scores against the
    negatives', over ``P Q`` (SciPy's ``mannwhitneyu``: average ranks of ties,
    ``U = R_+ - P (P + 1) / 2``). It equals sklearn's ``roc_auc_score`` (the
    trapezoids under the ROC curve) up to rounding, and is exact before its one
    division: a value is the same whatever the order of the items, and bit for
    bit what earlier runs logged.
    """
    from scipy.stats import mannwhitneyu

    positive, negative = target == 1, target == 0
    num_pos, num_neg = int(positive.sum()), int(negative.sum())
    if num_pos == 0 or num_neg == 0:
        return float("nan")
    u_statistic = mannwhitneyu(_numpy(scores[positive]), _numpy(scores[negative]), method="asymptotic").statistic
    return float(u_statistic / (num_pos * num_neg))


def predicted_subtokens(output: torch.Tensor) -> torch.Tensor:
    """(B, MAX_SEQ_LEN * V) sequence-head logits -> (B, MAX_SEQ_LEN) int64 ids, the arg-max at each position,
    with ``__EOS__`` (the last id of the training vocabulary, V - 1) written as -1."""
    from ..models.heads import MAX_SEQ_LEN

    ids = output.view(output.shape[0], MAX_SEQ_LEN, -1).argmax(dim=-1)
    return ids.masked_fill(ids == output.shape[1] // MAX_SEQ_LEN - 1, -1)


def f1_subtoken(tokens: torch.Tensor, target: torch.Tensor) -> float:
    """ogbg-code2's F1 by OGB's ``Evaluator``: per graph, over the sets of predicted and reference subtokens.

    A prediction is decoded as GraphGPS's ``decode_arr_to_seq`` does: the ids
    before the first ``__EOS__``.

    Parameters
    ----------
    tokens : (B, MAX_SEQ_LEN) int64 ids, ``__EOS__`` as -1 (:func:`predicted_subtokens`), or the
        (B, MAX_SEQ_LEN * V) logits themselves
    target : (B, MAX_SEQ_LEN + R) label rows: training ids, then the reference name's ids padded with NaN
    """
    from ..models.heads import MAX_SEQ_LEN

    if tokens.is_floating_point():
        tokens = predicted_subtokens(tokens)
    predictions, references = [], []
    for row, labels in zip(tokens.tolist(), target[:, MAX_SEQ_LEN:]):
        predictions.append(row[:row.index(-1)] if -1 in row else row)
        references.append([int(v) for v in labels[~torch.isnan(labels)].tolist()])
    return ogb_evaluate("F1", {"seq_ref": references, "seq_pred": predictions})


def f1_macro(pred: torch.Tensor, target: torch.Tensor) -> float:
    """Macro F1, sklearn's ``f1_score(average='macro', zero_division=0)`` (PascalVOC-SP, COCO-SP).

    The mean over the labels present in ``target`` or ``pred`` of
    :math:`F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c)`; a label absent from the
    targets has F1 = 0, a label absent from both is left out.

    Parameters
    ----------
    pred, target : (N,) int64
    """
    from sklearn import metrics as sklearn_metrics

    target, pred, labels = _labels(pred, target)
    return _mean(sklearn_metrics.f1_score(target, pred, labels=labels, average=None, zero_division=0))


def _binary_average_precision(scores: torch.Tensor, target: torch.Tensor) -> float:
    """(M,) float64 scores, (M,) {0, 1} targets with at least one positive -> AP.

    sklearn's ``average_precision_score`` sums the same products in NumPy's
    order; summed here from the highest threshold down, the value is the same
    up to the last bit, and bit for bit what earlier runs logged.
    """
    from sklearn import metrics as sklearn_metrics

    precision, recall, _ = sklearn_metrics.precision_recall_curve(_numpy(target), _numpy(scores))
    # sklearn's points run from the lowest threshold up, then (recall 0, precision 1), which has no width
    precision, recall = torch.from_numpy(precision[-2::-1].copy()), torch.from_numpy(recall[-2::-1].copy())
    return (torch.diff(recall, prepend=recall.new_zeros(1)) * precision).sum().item()


def _labels(pred: torch.Tensor, target: torch.Tensor):
    """``(target, pred, labels)`` as NumPy: (N,), (N,) and the sorted labels occurring in either."""
    _check_same_length(pred, target)
    target, pred = _numpy(target).reshape(-1), _numpy(pred).reshape(-1)
    return target, pred, np.union1d(target, pred)


def _mean(per_label: np.ndarray) -> float:
    """The mean of sklearn's per-label scores, summed in float64 as torch does (sklearn's ``average='macro'``
    sums in NumPy's order: the same up to the last bit, and this keeps earlier runs' values bit for bit)."""
    return torch.from_numpy(np.asarray(per_label, dtype=np.float64)).mean().item()


def _numpy(values: torch.Tensor) -> np.ndarray:
    return values.detach().cpu().numpy()


#: Columns of :func:`link_ranking_table`: raw (LRGB's original, as GEAET reports) and filtered ranks.
RANK_METRICS = ("hits@1", "hits@3", "hits@10", "mrr")
RANKING_COLUMNS = RANK_METRICS + tuple(f"{name}_filtered" for name in RANK_METRICS)


def positive_ranks(scores: torch.Tensor, positive: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """Rank of each positive among its candidates, ties shared: (P, C), (P,), (P, C) bool -> (P,) float64.

    :math:`r = 1 + |\\{c : s_c > s^+\\}| + \\tfrac12 |\\{c : s_c = s^+\\}|` over
    the candidates ``c`` (``candidates[p]``, the positive's own column left
    out), the mean of the optimistic and pessimistic rank (OGB's ``_eval_mrr``).
    For distinct scores this is GraphGPS's ``argsort`` position; on ties that
    position depends on the sort implementation.

    Parameters
    ----------
    scores : (P, C) float, row ``p`` the scores of positive ``p``'s row
    positive : (P,) int64, the column of the positive itself
    candidates : (P, C) bool, the columns it is ranked against
    """
    own = scores.gather(1, positive.unsqueeze(1))
    others = candidates.clone()
    others[torch.arange(len(positive), device=others.device), positive] = False
    higher = ((scores > own) & others).sum(dim=1)
    tied = ((scores == own) & others).sum(dim=1)
    return 1.0 + higher.double() + 0.5 * tied.double()


def rank_metrics(ranks: torch.Tensor) -> torch.Tensor:
    """(P,) ranks -> (P, 4) float64 ``[rank <= 1, rank <= 3, rank <= 10, 1 / rank]`` (:data:`RANK_METRICS`)."""
    ranks = ranks.double()
    return torch.stack([(ranks <= 1).double(), (ranks <= 3).double(), (ranks <= 10).double(), 1.0 / ranks], dim=1)


def link_ranking_table(output: torch.Tensor, target: torch.Tensor):
    """Per-graph Hits@1/3/10 and MRR of a batch, as GraphGPS's ``inductive_edge`` head computes them.

    For every positive pair (i, j) of a graph (both directions count), the
    score :math:`z_i^\\top z_j` is ranked (:func:`positive_ranks`) against the
    scores of (i, k) for the graph's other nodes k:

    * raw (LRGB's original metric, what GEAET and the LRGB paper report):
      every k != j, so the self pair (i, i) and i's other positives count as
      negatives;
    * filtered (LRGB's later ``*_filtered``): every k that is not a positive
      of i; (i, i) still counts.

    Each graph's value is the mean over its positive pairs; graphs without one
    are left out (LRGB drops such molecules; GraphGPS would count them as 0).
    Hits@k uses the shared-tie rank, so with fewer than k candidates it is 1.

    Parameters
    ----------
    output : (N, d) float pair embeddings (:class:`~geaet_dgl.models.heads.LinkHead`)
    target : (P, 4) int64 link targets ``(src, dst, first, num_nodes)`` (``collate_links``)

    Returns
    -------
    table : (G', 8) float64, one row per graph with a positive, columns :data:`RANKING_COLUMNS`
    positives : (G',) int64 positive pairs per graph
    """
    src, dst, first, count = target.long().unbind(dim=1)
    starts, graph = torch.unique(first, return_inverse=True)
    sizes = torch.zeros_like(starts).scatter_(0, graph, count)
    slots = torch.arange(int(count.max()) if len(count) else 0, device=output.device)
    valid = slots < sizes.unsqueeze(1)  # (G', n_max)
    nodes = torch.where(valid, starts.unsqueeze(1) + slots, 0)
    z = output[nodes] * valid.unsqueeze(2)
    scores = torch.bmm(z, z.transpose(1, 2))  # (G', n_max, n_max) every pair of each graph
    row, col = src - first, dst - first
    is_positive = torch.zeros_like(scores, dtype=torch.bool)
    is_positive[graph, row, col] = True
    rows, candidates = scores[graph, row], valid[graph]
    raw = rank_metrics(positive_ranks(rows, col, candidates))
    filtered = rank_metrics(positive_ranks(rows, col, candidates & ~is_positive[graph, row]))
    positives = torch.bincount(graph, minlength=len(starts))
    per_pair = torch.cat([raw, filtered], dim=1)
    table = torch.zeros(len(starts), per_pair.shape[1], dtype=torch.float64, device=output.device)
    table.index_add_(0, graph, per_pair)
    return table / positives.unsqueeze(1), positives


def link_table_means(table: torch.Tensor) -> Dict[str, float]:
    """Means over graphs of a :func:`link_ranking_table` -> ``{'hits@1': ..., 'mrr_filtered': ...}``."""
    if len(table) == 0:
        raise ValueError("no graph has a positive pair to rank")
    return dict(zip(RANKING_COLUMNS, table.mean(dim=0).tolist()))


def mean_reciprocal_rank(table: torch.Tensor, positives: torch.Tensor) -> float:
    """MRR (raw) from a :func:`link_ranking_table`: the mean over graphs of each graph's MRR."""
    return link_table_means(table)["mrr"]


def _as_columns(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, 1) if x.ndim == 1 else x


def _check_same_length(pred: torch.Tensor, target: torch.Tensor) -> None:
    if pred.numel() != target.numel():
        raise ValueError(f"got {pred.numel()} predictions for {target.numel()} targets")


@dataclass(frozen=True)
class MetricSpec:
    """A metric: its function, whether larger is better, and what it reads.

    ``reads`` is ``"labels"`` (the function gets :func:`predicted_labels` of
    the output), ``"tokens"`` (:func:`predicted_subtokens`), ``"scores"``
    (it gets the raw output) or ``"links"`` (it gets the per-graph
    :func:`link_ranking_table` of each batch, stacked).
    """

    name: str
    fn: Callable[[torch.Tensor, torch.Tensor], float]
    higher_is_better: bool
    reads: str


METRICS: Dict[str, MetricSpec] = {
    "accuracy": MetricSpec("accuracy", accuracy, True, "labels"),
    "balanced_accuracy": MetricSpec("balanced_accuracy", balanced_accuracy, True, "labels"),
    "mae": MetricSpec("mae", mae, False, "scores"),
    "average_precision": MetricSpec("average_precision", average_precision, True, "scores"),
    "f1_macro": MetricSpec("f1_macro", f1_macro, True, "labels"),
    "roc_auc": MetricSpec("roc_auc", roc_auc, True, "scores"),
    "f1_subtoken": MetricSpec("f1_subtoken", f1_subtoken, True, "tokens"),
    "mrr": MetricSpec("mrr", mean_reciprocal_rank, True, "links"),
}


def get_metric(name: str) -> MetricSpec:
    if name not in METRICS:
        raise ValueError(f"metric={name!r} is not one of {', '.join(METRICS)}")
    return METRICS[name]


def is_improvement(metric: str, new: float, best: Optional[float]) -> bool:
    """True if ``new`` is strictly better than ``best`` (ties keep the earlier epoch)."""
    if best is None:
        return True
    return new > best if get_metric(metric).higher_is_better else new < best


class MetricAccumulator:
    """Collects one pass over a split: the loss and what the metric reads.

    The loss is averaged with one weight per target row (graphs for graph
    tasks, nodes for node tasks), as the reference's logger does. Only what
    the metric needs is kept (labels, not logits, for classification), so the
    state stays small enough to sit in a mid-epoch checkpoint.
    """

    def __init__(self, metric: str):
        self.spec = get_metric(metric)
        self.loss_sum = 0.0
        self.count = 0
        self.num_graphs = 0
        self._outputs: List[torch.Tensor] = []
        self._targets: List[torch.Tensor] = []

    def update(self, output: torch.Tensor, target: torch.Tensor, loss: float, num_graphs: int) -> None:
        """Add one batch: model output (B or N, C), targets, its mean loss."""
        output, target = output.detach(), target.detach()
        rows = target.shape[0]
        if self.spec.reads == "links":  # ranked now: a split's node embeddings are too big to keep
            output, target = link_ranking_table(output, target)
        output, target = output.cpu(), target.cpu()
        if self.spec.reads == "labels":
            output = predicted_labels(output)
        elif self.spec.reads == "tokens":  # ids, not a split's (B, 5 x 5,002) logits
            output = predicted_subtokens(output)
        self._outputs.append(output)
        self._targets.append(target)
        self.loss_sum += loss * rows
        self.count += rows
        self.num_graphs += num_graphs

    def compute(self) -> Dict[str, float]:
        """-> {"loss": mean loss, "metric": the metric over everything added}; ranking metrics
        add their other columns (``"hits@1"``, ..., ``"mrr_filtered"``)."""
        if not self.count:
            raise ValueError("no batch was added; the split is empty")
        outputs = torch.cat(self._outputs)
        result = {"loss": self.loss_sum / self.count, "metric": self.spec.fn(outputs, torch.cat(self._targets))}
        if self.spec.reads == "links":
            result.update((k, v) for k, v in link_table_means(outputs).items() if k != self.spec.name)
        return result

    def state_dict(self) -> dict:
        return {
            "metric": self.spec.name, "loss_sum": self.loss_sum, "count": self.count,
            "num_graphs": self.num_graphs,
            "outputs": torch.cat(self._outputs) if self._outputs else None,
            "targets": torch.cat(self._targets) if self._targets else None,
        }

    def merge_state_dict(self, state: dict) -> None:
        """Append another accumulator's contents (its :meth:`state_dict`) after this one's.

        Merging per-batch states in batch order repeats the float operations
        of :meth:`update`, so the result equals one accumulator fed all batches.
        """
        if state["metric"] != self.spec.name:
            raise ValueError(f"cannot merge a {state['metric']} accumulator into a {self.spec.name} one")
        self.loss_sum += state["loss_sum"]
        self.count += state["count"]
        self.num_graphs += state["num_graphs"]
        if state["outputs"] is not None:
            self._outputs.append(state["outputs"])
            self._targets.append(state["targets"])

    def load_state_dict(self, state: dict) -> None:
        self.spec = get_metric(state["metric"])
        self.loss_sum, self.count, self.num_graphs = state["loss_sum"], state["count"], state["num_graphs"]
        self._outputs = [state["outputs"]] if state["outputs"] is not None else []
        self._targets = [state["targets"]] if state["targets"] is not None else []
