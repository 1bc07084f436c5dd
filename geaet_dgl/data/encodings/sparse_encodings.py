"""LapPE eigenpairs and RWSE of graphs too large for dense ``N x N`` matrices.

:mod:`.positional_encoding` uses these above ``DENSE_MAX_NODES`` nodes; below,
its dense recipe (the reference's) is exact and fast. Both compute the same
quantities:

* :func:`sparse_laplacian_eig`: the ``k`` smallest eigenpairs of the Laplacian
  of the undirected, unweighted edge set (self loops dropped), ``'sym'``
  (``I - D^-1/2 A D^-1/2``, diagonal 1 on isolated nodes as PyG) or
  ``'none'`` (``D - A``). The zero eigenvalues are known in closed form, one
  per connected component (for ``'sym'``: one per component with an edge;
  an isolated node is an eigenvector of eigenvalue 1), so they are written down
  and shifted out of the way; the rest come from Lanczos iterations (ARPACK's
  ``eigsh``) on ``L + s Q Q^T``, which needs only products with the sparse
  Laplacian: ``O(E)`` memory and ``O(E)`` time per iteration. Eigenvectors of
  an eigenvalue of multiplicity > 1 are a basis of its eigenspace, as with
  the dense solver (which one differs: agreement is up to sign and rotation
  within such a space).
* :func:`sparse_random_walk_se`: ``diag(P^t)`` for ``t = 1..k`` by sparse
  products of blocks of rows of ``P = D_out^-1 A``, each row carrying its
  ``t``-step neighbourhood: exact, memory capped by shrinking the block. The
  work is the total size of the ``t``-step neighbourhoods: linear in the edges
  while they stay bounded (meshes, superpixel and kNN graphs of low-dimensional
  data), but on expander-like graphs (random graphs, social networks) they fill
  the graph after a few steps. There (by estimated cost, see ``RWSE_ROW_COST``)
  the diagonals come from chunks of columns instead
  (:func:`column_chunk_random_walk_se`): ``P^t[:, C] = P P^(t-1)[:, C]`` as dense
  ``(N, |C|)`` blocks, memory bounded by the chunk (``RWSE_CHUNK_BYTES``), time
  ``k * E * N`` multiply-adds (half that on a symmetric edge set, where
  ``diag(P^t) = diag(S^t)`` with the symmetric ``S = D^-1/2 A D^-1/2``, and
  ``diag(S^2m) = |S^m e_i|^2``, ``diag(S^(2m+1)) = <S^m e_i, S^(m+1) e_i>``): exact,
  never refused, but quadratic in the nodes, as every exact method on such graphs.
"""

import logging
import warnings
from typing import Tuple

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse import csgraph
from scipy.sparse.linalg import LinearOperator, eigsh, lobpcg


#: Lanczos residual tolerance (relative to the eigenvalue's magnitude, ARPACK's criterion).
EIGSH_TOL = 1e-6
#: LOBPCG: residual tolerance and the largest accepted residual (both times the spectrum's bound), the extra
#: block vectors beyond the k wanted (faster convergence), the iteration cap, and at most this many known
#: (closed-form) eigenvectors as constraints (more components: Lanczos with them shifted away).
LOBPCG_TOL, LOBPCG_ACCEPT, LOBPCG_EXTRA, LOBPCG_MAXITER, MAX_CONSTRAINTS = 1e-6, 1e-4, 4, 200, 64
#: Multigrid pays when the first coarse operator keeps under this share of L's entries and the whole
#: hierarchy under this many times them (:func:`multigrid_preconditioner`).
MAX_COARSE_FILL, MAX_OPERATOR_COMPLEXITY = 0.5, 2.0
#: Stored entries of one block of walk-matrix rows before the block is halved (~12 bytes each).
RWSE_BLOCK_NNZ = 1 << 23
#: Row entries (summed over the k steps and all nodes) the row-block RWSE may touch; above, column chunks.
RWSE_MAX_WORK = 2e10
#: Bytes of the dense (N, c) float32 blocks of one column chunk (three live at once).
RWSE_CHUNK_BYTES = 384 << 20
#: Cost of a row-block multiply-add (scipy's sparse-sparse product) in column-chunk ones (torch's CSR times
#: dense): the routes are chosen by estimated cost. Measured at about 7 (one thread, a 5,000-node planted
#: partition, RWSE-16: rows 37.9 CPU s for 3.2e9, columns 3.5 CPU s for 2.0e9); 5 leans to the row blocks.
RWSE_ROW_COST = 5.0

log = logging.getLogger(__name__)


def symmetric_adjacency(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> sp.csr_matrix:
    """``positional_encoding.undirected_adjacency`` as a ``(N, N)`` float64 CSR matrix (the ``(E,)`` edges
    made symmetric, self loops dropped, duplicates merged to 1)."""
    keep = src != dst
    rows = np.concatenate([src[keep], dst[keep]])
    cols = np.concatenate([dst[keep], src[keep]])
    adj = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(num_nodes, num_nodes))
    adj.sum_duplicates()
    adj.data[:] = 1.0
    return adj


def _known_eigenpairs(adj: sp.csr_matrix, deg: np.ndarray, norm: str):
    """The eigenpairs of closed form: one per component (and per isolated node for ``'sym'``).

    Returns ``(labels (N,), weights (N,), values (C,), order (C,))``: the
    eigenvector of component ``c`` is ``weights`` on the nodes with
    ``labels == c`` (unit norm), with eigenvalue ``values[c]``; ``order`` lists
    components largest first.
    """
    count, labels = csgraph.connected_components(adj, directed=False)
    sizes = np.bincount(labels, minlength=count)
    if norm == "none":
        weights = 1.0 / np.sqrt(sizes[labels])
        values = np.zeros(count)
    else:  # 'sym': sqrt(d) on a component with edges; an isolated node is e_i with eigenvalue 1
        raw = np.where(deg > 0, np.sqrt(deg), 1.0)
        weights = raw / np.sqrt(np.bincount(labels, weights=raw**2, minlength=count))[labels]
        values = np.where(np.bincount(labels, weights=deg, minlength=count) > 0, 0.0, 1.0)
    order = np.lexsort((np.arange(count), -sizes))
    return labels, weights, values, order


def _component_vectors(labels, weights, components, num_nodes):
    vecs = np.zeros((num_nodes, len(components)))
    for j, c in enumerate(components):
        on = labels == c
        vecs[on, j] = weights[on]
    return vecs


def sparse_laplacian_eig(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, k: int, norm: str = "sym", seed: int = 0,
    solver: str = "auto",
) -> Tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest Laplacian eigenpairs with sparse matrices only.

    Parameters
    ----------
    src, dst : np.ndarray
        ``(E,)`` integer endpoints; direction and duplicates ignored.
    num_nodes : int
        ``N >= k``.
    k : int
        Eigenpairs wanted, ``1 <= k <= N``.
    norm : {'sym', 'none'}
    seed : int
        Seeds the Lanczos start vector (the result is deterministic).
    solver : {'auto', 'lobpcg', 'arpack'}
        ``'auto'``: LOBPCG with an algebraic-multigrid preconditioner where multigrid is cheap on
        this graph (:func:`lobpcg_smallest`), else ARPACK's Lanczos; ``'lobpcg'`` the former
        whenever it converges, ``'arpack'`` always Lanczos.

    Returns
    -------
    vals : np.ndarray
        ``(k,)`` float64 ascending.
    vecs : np.ndarray
        ``(N, k)`` float64, orthonormal columns, ``L vecs[:, j] = vals[j] vecs[:, j]``.

    Examples
    --------
    >>> import numpy as np
    >>> vals, vecs = sparse_laplacian_eig(np.array([0, 1, 2]), np.array([1, 2, 3]), 4, 2, "none")
    >>> np.round(vals, 4)  # path P4: 2 - 2 cos(j pi / 4)
    array([0.    , 0.5858])
    """
    adj = symmetric_adjacency(src, dst, num_nodes)
    deg = np.asarray(adj.sum(axis=1)).ravel()
    labels, weights, values, order = _known_eigenpairs(adj, deg, norm)
    zero = [c for c in order if values[c] == 0.0]
    if len(zero) >= k:  # the k smallest are all 0: a basis of the null space, largest components first
        return np.zeros(k), _component_vectors(labels, weights, zero[:k], num_nodes)
    if norm == "none":
        diag, scale, shift = deg, np.ones(num_nodes), 2.0 * max(deg.max(initial=0.0), 1.0) + 1.0
    else:
        diag, scale, shift = np.ones(num_nodes), np.where(deg > 0, deg, 1.0) ** -0.5, 3.0  # spectrum within [0, 2]
    count = len(values)

    def matvec(x):
        x = np.asarray(x).ravel()
        coeff = np.bincount(labels, weights=weights * x, minlength=count)  # Q^T x, Q's columns disjoint
        return diag * x - scale * (adj @ (scale * x)) + shift * weights * coeff[labels]

    # Every closed-form pair is shifted to `shift` above the spectrum; Lanczos finds the smallest others.
    need = k - len(zero)
    solvable = num_nodes - count
    found_vals, found_vecs = np.zeros(0), np.zeros((num_nodes, 0))
    if solvable > 0:
        want = min(need, solvable)
        op = LinearOperator((num_nodes, num_nodes), matvec=matvec, dtype=np.float64)
        v0 = np.random.default_rng(seed).standard_normal(num_nodes)
        found = None
        if want >= num_nodes - 1:  # ARPACK needs k < N - 1; only tiny graphs get here
            full = np.linalg.eigh(op @ np.eye(num_nodes))
            found = full[0][:want], full[1][:, :want]
        elif solver in ("auto", "lobpcg") and count <= MAX_CONSTRAINTS:
            lap = laplacian_csr(adj, deg, norm)
            known = _component_vectors(labels, weights, range(count), num_nodes)
            found = lobpcg_smallest(lap, want, known, seed, force=solver == "lobpcg")
        if found is None:
            found = eigsh(op, k=want, which="SA", v0=v0, tol=EIGSH_TOL, ncv=min(num_nodes - 1, max(2 * want + 1, 24)))
        found_vals, found_vecs = found
    other = [c for c in order if values[c] != 0.0]  # 'sym' isolated nodes (eigenvalue 1)
    vals = np.concatenate([np.zeros(len(zero)), found_vals, values[other]])
    vecs = np.concatenate([_component_vectors(labels, weights, zero, num_nodes), found_vecs,
                           _component_vectors(labels, weights, other[:k], num_nodes)], axis=1)
    vals = vals[: vecs.shape[1]]
    keep = np.argsort(vals, kind="stable")[:k]
    return vals[keep], vecs[:, keep]


def laplacian_csr(adj: sp.csr_matrix, deg: np.ndarray, norm: str) -> sp.csr_matrix:
    """The (N, N) Laplacian of ``adj`` as CSR: ``D - A`` (``'none'``) or ``I - D^-1/2 A D^-1/2`` (``'sym'``)."""
    if norm == "none":
        return (sp.diags(deg) - adj).tocsr()
    scale = sp.diags(np.where(deg > 0, deg, 1.0) ** -0.5)
    return (sp.identity(adj.shape[0], format="csr") - scale @ adj @ scale).tocsr()


def multigrid_preconditioner(lap: sp.csr_matrix, force: bool = False):
    """An algebraic-multigrid V-cycle approximating ``(L + eps I)^-1`` (pyamg), or None where it would not pay.

    Aggregation multigrid coarsens graphs whose neighbourhoods grow slowly (meshes, kNN graphs of
    low-dimensional data, road networks) into much smaller ones; on expanders (random, block-model
    and social graphs) the coarse operators fill in (measured on a planted partition of 30k nodes:
    operator complexity 7.6, a dense coarse level), and there Lanczos converges fast anyway. The
    test costs one aggregation and one sparse triple product, ``O(E)``: the tentative coarse
    operator must hold under :data:`MAX_COARSE_FILL` of ``L``'s entries, and the built hierarchy at
    most :data:`MAX_OPERATOR_COMPLEXITY` times ``L``'s.
    """
    import pyamg
    from pyamg.aggregation import standard_aggregation

    eps = 1e-3 * float(lap.diagonal().mean())
    shifted = (lap + eps * sp.identity(lap.shape[0], format="csr")).tocsr()
    if not force:
        aggregates = standard_aggregation(shifted)[0].tocsr()
        if (aggregates.T @ shifted @ aggregates).nnz > MAX_COARSE_FILL * shifted.nnz:
            return None
    hierarchy = pyamg.smoothed_aggregation_solver(shifted, symmetry="symmetric", max_coarse=500)
    if not force and hierarchy.operator_complexity() > MAX_OPERATOR_COMPLEXITY:
        return None
    return hierarchy.aspreconditioner()


def lobpcg_smallest(lap: sp.csr_matrix, want: int, known: np.ndarray, seed: int = 0, force: bool = False):
    """The ``want`` smallest eigenpairs of ``lap`` orthogonal to the (N, C) ``known`` eigenvectors, by LOBPCG.

    Preconditioned by :func:`multigrid_preconditioner`, the iterations needed stay about constant as the
    graph grows, so the cost is ``O(E k)`` per iteration: near-linear. Returns ``(vals (want,),
    vecs (N, want))`` ascending, or None (no cheap preconditioner, or no convergence: the caller
    falls back to Lanczos).
    """
    precond = multigrid_preconditioner(lap, force)
    if precond is None:
        return None
    num_nodes = lap.shape[0]
    block = min(want + LOBPCG_EXTRA, num_nodes - known.shape[1] - 1)
    if block < want or 5 * block >= num_nodes:
        return None
    start = np.random.default_rng(seed).standard_normal((num_nodes, block))
    scale = float(abs(lap).sum(axis=1).max())  # bounds the spectrum
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not reaching the requested tolerance": checked below
        vals, vecs = lobpcg(lap, start, M=precond, Y=known if known.shape[1] else None, tol=LOBPCG_TOL * scale,
                            maxiter=LOBPCG_MAXITER, largest=False)
    order = np.argsort(vals)[:want]
    vals, vecs = vals[order], vecs[:, order]
    residual = np.linalg.norm(lap @ vecs - vecs * vals, axis=0)
    if not np.all(residual <= LOBPCG_ACCEPT * scale):
        return None
    return vals, vecs


def walk_matrix(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> sp.csr_matrix:
    """``P = D_out^-1 A`` on the edges as stored (duplicates add up); rows of sinks are 0."""
    adj = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(num_nodes, num_nodes))
    adj.sum_duplicates()
    out_deg = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.where(out_deg > 0, 1.0 / np.where(out_deg > 0, out_deg, 1.0), 0.0)
    return sp.diags(inv) @ adj


def _rwse_work_estimate(step: sp.csr_matrix, k: int, samples: int = 32, seed: int = 0) -> float:
    """Row entries all ``k`` steps touch, from the neighbourhoods of a few sampled rows."""
    n = step.shape[0]
    rows = np.random.default_rng(seed).choice(n, size=min(samples, n), replace=False)
    block = step[rows]
    total = 0.0
    for _ in range(k):
        total += block.nnz
        if total / len(rows) * n > RWSE_MAX_WORK or _ + 1 == k:
            break
        block = block @ step
    return total / len(rows) * n


def sparse_random_walk_se(src: np.ndarray, dst: np.ndarray, num_nodes: int, k: int) -> np.ndarray:
    """``diag(P^t)``, ``t = 1..k``, by sparse products of blocks of rows, or of chunks of columns where the
    walks' neighbourhoods cover the graph (whichever the estimated cost favours, ``RWSE_ROW_COST``; always
    columns above ``RWSE_MAX_WORK`` row entries).

    Parameters
    ----------
    src, dst : np.ndarray
        ``(E,)`` integer endpoints; a walk follows ``src -> dst``.
    num_nodes : int
    k : int
        Steps, ``>= 1``.

    Returns
    -------
    np.ndarray
        ``(N, k)`` float32, ``[i, t-1] = (P^t)[i, i]``.
    """
    step = walk_matrix(src, dst, num_nodes)
    work = _rwse_work_estimate(step, k) if num_nodes else 0.0
    row_ops = work * step.nnz / max(num_nodes, 1)  # every touched row entry meets a row of P
    column_ops = ((k + 1) // 2) * step.nnz * num_nodes  # the symmetric case's products
    if work > RWSE_MAX_WORK or RWSE_ROW_COST * row_ops > column_ops:
        return column_chunk_random_walk_se(src, dst, num_nodes, k)
    out = np.zeros((num_nodes, k), dtype=np.float32)
    start, block = 0, max(1, min(num_nodes, RWSE_BLOCK_NNZ // max(1, 4 * step.nnz // max(num_nodes, 1))))
    while start < num_nodes:
        stop = min(num_nodes, start + block)
        rows = step[start:stop]
        columns = []
        for t in range(k):
            columns.append(rows.diagonal(start))
            if t + 1 < k:
                rows = rows @ step
                if rows.nnz > RWSE_BLOCK_NNZ and stop - start > 1:
                    break
        if len(columns) < k:  # the block outgrew its budget: halve it and redo
            block = max(1, (stop - start) // 2)
            continue
        out[start:stop] = np.stack(columns, axis=1)
        start = stop
    return out


def _torch_csr(matrix: sp.csr_matrix) -> torch.Tensor:
    """``matrix`` as a float32 torch CSR tensor (its product with a dense block uses torch's threads)."""
    matrix = matrix.tocsr().astype(np.float32)
    with warnings.catch_warnings():  # "sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(torch.from_numpy(matrix.indptr.astype(np.int64)),
                                       torch.from_numpy(matrix.indices.astype(np.int64)),
                                       torch.from_numpy(matrix.data), size=matrix.shape)


def _is_symmetric(adj: sp.csr_matrix) -> bool:
    return (adj != adj.T).nnz == 0


def column_chunk_random_walk_se(src: np.ndarray, dst: np.ndarray, num_nodes: int, k: int,
                                chunk: int = 0) -> np.ndarray:
    """``diag(P^t)``, ``t = 1..k``, exactly, from chunks of columns: memory bounded by the chunk, not the graph.

    For a chunk ``C`` of ``c`` columns, ``Y_t = P^t[:, C]`` is a dense ``(N, c)`` float32 block, ``Y_t = P Y_(t-1)``
    (a sparse CSR times dense product, ``E * c`` multiply-adds), and ``(P^t)[C_j, C_j] = Y_t[C_j, j]``. On a
    symmetric edge set (``A = A^T``, multiplicities included) the walk is similar to ``S = D^-1/2 A D^-1/2``, so
    ``diag(P^t) = diag(S^t)``; with ``Z_m = S^m[:, C]``, ``diag(S^2m)_C`` is the column sums of ``Z_m * Z_m`` and
    ``diag(S^(2m+1))_C`` those of ``Z_m * Z_(m+1)``: ``ceil(k / 2)`` products instead of ``k``.

    Parameters
    ----------
    src, dst : np.ndarray
        ``(E,)`` integer endpoints; a walk follows ``src -> dst`` (duplicates count twice).
    num_nodes : int
    k : int
        Steps, ``>= 1``.
    chunk : int
        Columns per chunk; 0: as many as ``RWSE_CHUNK_BYTES`` allows (three ``(N, c)`` float32 blocks).

    Returns
    -------
    np.ndarray
        ``(N, k)`` float32, ``[i, t-1] = (P^t)[i, i]``.
    """
    out = np.zeros((num_nodes, k), dtype=np.float32)
    if num_nodes == 0:
        return out
    adj = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(num_nodes, num_nodes))
    adj.sum_duplicates()
    deg = np.asarray(adj.sum(axis=1)).ravel()
    symmetric = _is_symmetric(adj)
    if symmetric:
        half = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
        operator = _torch_csr(sp.diags(half) @ adj @ sp.diags(half))
        products = (k + 1) // 2
    else:
        inv = np.where(deg > 0, 1.0 / np.where(deg > 0, deg, 1.0), 0.0)
        operator = _torch_csr(sp.diags(inv) @ adj)
        products = k
    chunk = int(chunk) or max(1, min(num_nodes, RWSE_CHUNK_BYTES // (3 * 4 * num_nodes)))
    chunks = -(-num_nodes // chunk)
    if chunks > 1:
        log.info("RWSE k=%d on %s nodes, %s edges: walks cover the graph; exact diagonals from %d chunks of %d "
                 "columns (about %.1e multiply-adds, %.0f MiB of blocks)", k, f"{num_nodes:,}", f"{len(src):,}",
                 chunks, chunk, float(products) * adj.nnz * num_nodes, 3 * 4 * num_nodes * chunk / 2 ** 20)
    for start in range(0, num_nodes, chunk):
        stop = min(num_nodes, start + chunk)
        cols = torch.arange(stop - start)
        rows = torch.arange(start, stop)
        current = torch.zeros(num_nodes, stop - start)
        current[rows, cols] = 1.0
        for m in range(products):
            following = operator @ current
            if symmetric:
                if 2 * m < k and m > 0:  # t = 2m
                    out[start:stop, 2 * m - 1] = (current * current).sum(0).numpy()
                if 2 * m + 1 <= k:  # t = 2m + 1
                    out[start:stop, 2 * m] = (current * following).sum(0).numpy()
            else:
                out[start:stop, m] = following[rows, cols].numpy()
            current = following
        if symmetric and k % 2 == 0:  # t = k = 2 * products
            out[start:stop, k - 1] = (current * current).sum(0).numpy()
    return out
