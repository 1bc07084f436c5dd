"""What the reference's own loader (GraphGPS's ``master_loader``) computes beside the graphs, computed by its code.

Its loader, after reading a dataset, precomputes per graph the statistics of every enabled ``posenc_*``
section (``compute_posenc_stats``: Laplacian eigenpairs, random-walk landing probabilities, heat-kernel and
electrostatic statistics, Graphormer's degrees, spatial types and shortest-path edge types) and, for a PNA
layer type whose ``gt.pna_degrees`` is empty, the in-degree histogram of the training split
(``compute_indegree_histogram``), which PNA's constructor divides by. The in-process comparisons
(``benchmark --against-pyg REF --config``) build the reference's model and batches with these, from its
checkout, imported at run time (nothing of it is copied here).

Two statistics are kept as we computed them, and given to both models:

- the Laplacian eigenvectors (``EigVecs``, ``eigvecs_sn``): an eigenvector's sign, and a repeated
  eigenvalue's basis, are arbitrary; both sides take them from ``np.linalg.eigh`` of the same matrix, and
  ``tests/interop/test_encodings_reference.py`` checks ours against ``compute_posenc_stats`` up to sign;
- ``pestat_ElstaticSE``: the reference's float32 ``torch.pinverse`` inverts the Laplacian's numerically zero
  eigenvalue, which leaves rounding noise of ~1e-2 in it (checked with the pseudo-inverse in float64 in the
  same test file).

Two more are float32 inputs that the two sides compute by different routes, :data:`FLOAT32_STATISTICS`: the
random-walk landing probabilities (``pestat_RWSE``: the reference raises ``D^-1 A`` to the k-th power in float32,
twenty float32 matrix products for ``range(1,21)``; we do it in float64 and round once) and the heat-kernel
diagonals (``pestat_HKdiagSE``: float64 on both sides from another eigendecomposition, stored in float32). They
agree to float32 rounding (1.5e-7 absolute on ZINC-shaped graphs' RWSE), and a float64 comparison made on them
cannot agree better: the RWSE encoder's BatchNorm divides by each column's spread (0.02 on ZINC), and a ReLU whose
input lies within that rounding of 0 is on in one model and off in the other, which moves a gradient by about one
node's share of it (our own model alone, given RWSE moved at random by 1e-7, changed a gradient by 1.3e-4 of its
norm on one batch of 16 ZINC-shaped graphs in eight; by 1e-6, by 0.06% to 2% on each). So the parity check
(``benchmark --against-pyg --config``) gives both models ours (``keep=KEPT_AS_OURS + FLOAT32_STATISTICS``), where
a correct port agrees to 1e-15; the comparison on the reference's own float32 statistics is reported beside it.
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Iterable, List, Tuple

import torch

#: compute_posenc_stats's names of the ``posenc_*`` sections it precomputes statistics for
POSENC_TYPES = ("LapPE", "EquivStableLapPE", "SignNet", "RWSE", "HKdiagSE", "ElstaticSE", "GraphormerBias")
#: the fields kept as ours (see the module docstring)
KEPT_AS_OURS = ("EigVecs", "EigVals", "eigvecs_sn", "eigvals_sn", "pestat_ElstaticSE")
#: float32 inputs computed by another route on each side (see the module docstring): shared in the parity check
FLOAT32_STATISTICS = ("pestat_RWSE", "pestat_HKdiagSE")


def enabled_posenc_types(cfg) -> List[str]:
    """The ``posenc_*`` sections enabled in the reference's ``cfg``, as its loader lists them."""
    return [name for name in POSENC_TYPES if getattr(getattr(cfg, f"posenc_{name}", None), "enable", False)]


@contextlib.contextmanager
def _shortest_paths_as_dict():
    """networkx >= 3.3 returns all-pairs ``shortest_path`` as a generator; Graphormer's preprocessing (written
    for networkx 2) reads it as a dict. The call is wrapped in ``dict`` while the reference's code runs."""
    import networkx

    all_pairs = networkx.shortest_path

    def as_dict(graph, *args, **kwargs):
        paths = all_pairs(graph, *args, **kwargs)
        return paths if isinstance(paths, dict) or args or kwargs else dict(paths)

    networkx.shortest_path = as_dict
    try:
        yield
    finally:
        networkx.shortest_path = all_pairs


def with_reference_statistics(items: Iterable, cfg, keep: Tuple[str, ...] = KEPT_AS_OURS) -> list:
    """PyG ``Data`` items with the statistics the reference's loader computes for ``cfg`` (its
    ``compute_posenc_stats``), in place of ours, in float32; the ``keep`` fields (default :data:`KEPT_AS_OURS`)
    stay as they were."""
    compute_posenc_stats = importlib.import_module("GEAET.transform.posenc_stats").compute_posenc_stats
    pe_types = enabled_posenc_types(cfg)
    items = list(items)
    if not pe_types:
        return items
    undirected = all(data.is_undirected() for data in items[:10])  # as its loader estimates it
    out = []
    with _shortest_paths_as_dict():
        for data in items:
            kept = {key: data[key] for key in keep if key in data}
            data = compute_posenc_stats(data.clone(), pe_types, undirected, cfg)
            for key, value in kept.items():
                data[key] = value
            for key in data.keys():  # its heat kernels come out in float64; its models run in float32
                if isinstance(data[key], torch.Tensor) and data[key].dtype == torch.float64:
                    data[key] = data[key].float()
            out.append(data)
    return out


def reference_degree_histogram(ref_dir: str, items: Iterable) -> List[int]:
    """The in-degree histogram the reference's loader gives PNA (``compute_indegree_histogram``) of PyG items,
    with the reference imported from ``ref_dir``."""
    from .reference_model import import_reference_modules

    import_reference_modules(ref_dir)
    loader = importlib.import_module("GEAET.loader.master_loader")
    return [int(count) for count in loader.compute_indegree_histogram(list(items))]


def needs_degree_histogram(tree: dict) -> bool:
    """Whether the reference's loader would compute PNA's histogram for this YAML tree: a ``PNA`` layer type and
    an empty ``gt.pna_degrees``."""
    gt = tree.get("gt", {}) or {}
    return str(gt.get("layer_type", "")).startswith("PNA") and not gt.get("pna_degrees")
