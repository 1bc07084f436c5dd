"""Training losses, as graphgym's ``compute_loss`` and the reference's custom losses.

Every loss takes the model output and the targets and returns a scalar. As in
graphgym, a trailing dimension of size 1 is squeezed from both first, so a
single-logit binary head (N, 1) is read as (N,).

Example
-------
>>> import torch
>>> logits, target = torch.tensor([[2.0, 0.0], [0.0, 2.0]]), torch.tensor([0, 1])
>>> round(cross_entropy(logits, target).item(), 4)
0.1269
"""
from __future__ import annotations

from typing import Callable, Dict

import torch
import torch.nn.functional as F

from ..models.heads import pair_scores


def _squeeze(output: torch.Tensor, target: torch.Tensor):
    output = output.squeeze(-1) if output.ndim > 1 else output
    target = target.squeeze(-1) if target.ndim > 1 else target
    return output, target


def cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Softmax cross-entropy for (N, C) logits and (N,) int labels;
    binary cross-entropy with logits for a single logit (N,) and (N,) {0, 1}."""
    output, target = _squeeze(output, target)
    if output.ndim > 1 and target.ndim == 1:
        return F.nll_loss(F.log_softmax(output, dim=-1), target)
    return F.binary_cross_entropy_with_logits(output, target.float())


def weighted_cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with class weights from the batch's label counts (GraphGPS).

    With V targets of which n_c have class c, class c weighs
    :math:`w_c = (V - n_c) / V` (0 for a class absent from the batch). For
    (N, C) logits this is ``nll_loss(log_softmax, weight=w)`` (a mean
    normalised by the summed weights); for a single logit (N,) it is
    ``binary_cross_entropy_with_logits(weight=w[target])`` (a plain mean).

    Parameters
    ----------
    output : (N, C) or (N,) / (N, 1) float logits
    target : (N,) int64 labels
    """
    output, target = _squeeze(output, target)
    num_classes = output.shape[1] if output.ndim > 1 else 2
    total = target.shape[0]
    counts = torch.bincount(target, minlength=num_classes)
    weight = ((total - counts) / total * (counts > 0)).to(output.dtype)
    if output.ndim > 1:
        return F.nll_loss(F.log_softmax(output, dim=-1), target, weight=weight)
    return F.binary_cross_entropy_with_logits(output, target.to(output.dtype), weight=weight[target])


def l1(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean absolute error: (N, T) and (N, T) -> scalar (Peptides-Struct, ZINC)."""
    output, target = _squeeze(output, target)
    return F.l1_loss(output, target.to(output.dtype))


def bce(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Multi-label binary cross-entropy with logits, NaN targets left out (Peptides-Func).

    Parameters
    ----------
    output : (N, T) float logits
    target : (N, T) float in {0, 1}, NaN where unlabelled
    """
    output, target = _squeeze(output, target)
    labelled = ~torch.isnan(target)
    return F.binary_cross_entropy_with_logits(output[labelled], target[labelled].float())


def structured_negatives(target: torch.Tensor, per_positive: int = 2, tries: int = 10):
    """GraphGPS's structured negative sampling (PCQM-Contact): ``per_positive`` pairs (i, k) per positive (i, j).

    ``k`` is drawn uniformly from the nodes of i's graph (the global torch RNG
    of the target's device); a draw that is a positive pair or repeats an
    earlier negative is drawn again, up to ``tries`` times, then dropped.
    Self pairs (i, i) may be negatives.

    Parameters
    ----------
    target : (P, 4) int64 link targets ``(src, dst, first, num_nodes)`` (see ``collate_links``)

    Returns
    -------
    src, dst : (M,) int64 with ``M <= per_positive * P``
    """
    src, dst, first, count = target.unbind(dim=1)
    total = int((first + count).max()) if len(target) else 0
    positive = src * total + dst  # pairs as positions in the batch's adjacency matrix
    heads, low, size = (x.repeat_interleave(per_positive) for x in (src, first, count))

    def draw(n: int, rows: torch.Tensor) -> torch.Tensor:
        offsets = (torch.rand(n, device=target.device) * size[rows]).long()
        return low[rows] + torch.minimum(offsets, size[rows] - 1)

    tails = draw(len(heads), torch.arange(len(heads), device=target.device))
    for attempt in range(tries + 1):
        key = heads * total + tails
        _, inverse = torch.unique(key, return_inverse=True)
        order = torch.arange(len(key), device=key.device)
        first_seen = torch.full_like(order, len(key)).scatter_reduce(0, inverse, order, "amin")
        redo = (torch.isin(key, positive) | (first_seen[inverse] != order)).nonzero().squeeze(1)
        if attempt == tries or len(redo) == 0:
            break
        tails[redo] = draw(len(redo), redo)
    keep = torch.ones(len(heads), dtype=torch.bool, device=target.device)
    keep[redo] = False
    return heads[keep], tails[keep]


def link_cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of the positive pairs and freshly sampled negatives (PCQM-Contact).

    GraphGPS trains PCQM-Contact with ``cross_entropy`` (BCE with logits for
    one logit) over every positive pair (label 1) and two structured negatives
    per positive (label 0, :func:`structured_negatives`), redrawn for every
    batch; the logit of a pair is the dot product of its two node embeddings.

    Parameters
    ----------
    output : (N, d) float pair embeddings of the batch's nodes (:class:`~geaet_dgl.models.heads.LinkHead`)
    target : (P, 4) int64 link targets ``(src, dst, first, num_nodes)``
    """
    neg_src, neg_dst = structured_negatives(target)
    src, dst = torch.cat([target[:, 0], neg_src]), torch.cat([target[:, 1], neg_dst])
    labels = torch.zeros(len(src), device=output.device)
    labels[:len(target)] = 1.0
    return F.binary_cross_entropy_with_logits(pair_scores(output, src, dst), labels)


def sequence_cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over the positions of a token sequence of each position's softmax cross-entropy (GraphGPS's
    ``subtoken_cross_entropy`` of ogbg-code2): (B, L, V) logits, (B, L) int tokens -> scalar."""
    if output.ndim != 3 or target.shape != output.shape[:2]:
        raise ValueError(f"sequence_cross_entropy needs (B, L, V) logits and (B, L) tokens, got "
                         f"{tuple(output.shape)} and {tuple(target.shape)}")
    return F.cross_entropy(output.reshape(-1, output.shape[-1]).float(), target.reshape(-1).long())


LOSSES: Dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "cross_entropy": cross_entropy,
    "weighted_cross_entropy": weighted_cross_entropy,
    "l1": l1,
    "bce": bce,
    "link_cross_entropy": link_cross_entropy,
    "sequence_cross_entropy": sequence_cross_entropy,
}


def get_loss(name: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if name not in LOSSES:
        raise ValueError(f"loss={name!r} is not one of {', '.join(LOSSES)}")
    return LOSSES[name]
