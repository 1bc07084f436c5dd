"""Positional and structural encodings: computed per graph as the reference computes them, cached per split.

:mod:`.positional_encoding`
    LapPE eigenpairs and RWSE of one graph (``GEAET/transform/posenc_stats.py``):
    the reference's dense route up to ``DENSE_MAX_NODES`` nodes, the sparse one above.
:mod:`.sparse_encodings`
    The same LapPE and RWSE for graphs too large for ``N x N`` matrices (Lanczos
    / LOBPCG eigenpairs, row-block sparse walk products).
:mod:`.pe_cache`
    LapPE / RWSE of a split computed once, cached on disk next to the data
    (verified by checksum), attached as ``ndata['lap_pe']``, ``['lap_eigval']``, ``['rwse']``.
:mod:`.structural_encoding`
    GraphGPS's other encodings of one graph: HKdiagSE, ElstaticSE, Graphormer's
    shortest-path types and degrees.
:mod:`.se_cache`
    Those per split, cached the same way and attached (``ndata['hkdiag_se']``, ...).

Every loader attaches the encodings its run asks for through :mod:`.pe_cache`
(``attach_pe`` / ``cached_split_pe``); the run configuration adds the structural
ones through :mod:`.se_cache` (``attach_structural``).
"""
