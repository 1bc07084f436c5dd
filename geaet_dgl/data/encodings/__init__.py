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
:mod:`.apply`
    The one path a loader's graphs get their LapPE / RWSE by, after the loader (:func:`~.apply.encode_splits`):
    what is asked for (:class:`~.apply.EncodingRequest`), where the loader caches each split
    (:class:`~.apply.EncodingPlan` of :class:`~.apply.EncodingCache`).
:mod:`.structural_encoding`
    GraphGPS's other encodings of one graph: HKdiagSE, ElstaticSE, Graphormer's
    shortest-path types and degrees.
:mod:`.se_cache`
    Those per split, cached the same way and attached (``ndata['hkdiag_se']``, ...).

Loaders return their graphs without encodings and with an :class:`~.apply.EncodingPlan`;
:func:`~geaet_dgl.data.registry.load_with` then attaches the ones its
:class:`~geaet_dgl.data.options.LoadOptions` ask for through :func:`~.apply.encode_splits`
(:mod:`.pe_cache` underneath: the same cache files and keys as before) and adds the structural
ones (``options.structural``) through :mod:`.se_cache` (``attach_structural``).
"""
