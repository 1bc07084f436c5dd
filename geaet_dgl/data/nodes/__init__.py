"""Transductive node tasks: one graph with train / val / test node masks, from a file or a named set.

:mod:`.node_graph`
    :class:`~.node_graph.NodeGraph`, what every source below becomes (the graph,
    its masks, task and classes), and the reader of a user's one-graph file with
    masks (Cora's layout, homogeneous or a heterograph's target type).
:mod:`.node_sets`
    The field's named node sets (cora, citeseer, pubmed, actor, the WebKB and
    Wikipedia sets, roman-empire and the heterophilous sets, Amazon, Coauthor,
    wikics) through DGL's own loader classes.
:mod:`.node_splits`
    Which of a set's published splits a run uses (``split_index``), or a seeded
    60/20/20 split where none is published.
:mod:`.homophily`
    Edge and adjusted label homophily (Platonov et al.) of the edges between known nodes: logged beside the
    node recipe a graph file gets.
:mod:`.ogbn`
    ogbn-arxiv / ogbn-products through OGB's ``DglNodePropPredDataset``, offline.

Generated node graphs (planted partitions, kNN graphs) are in
:mod:`geaet_dgl.data.generated.node_graphs`.
"""
