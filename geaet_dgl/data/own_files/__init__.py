"""The user's own graph files (``dgl.save_graphs``): ``--dataset PATH.bin`` for training, ``predict`` input.

:mod:`.graph_files`
    Homogeneous graphs with graph labels (classification, regression) or node
    labels on every graph: reading the file (a trial load first) and loading it as splits.
:mod:`.file_features`
    The feature widths and integer vocabularies, checked and conformed across graphs.
:mod:`.file_labels`
    The labels and the task inferred from them.
:mod:`.file_splits`
    The split: a split file, a run's recorded split, or seeded fractions.
:mod:`.hetero_files`
    Graphs of several node and edge types: the schema, per-type features, the
    target node type; :func:`~.hetero_files.inspect_file` / :func:`~.hetero_files.load_file`
    dispatch a file to the right reader.

A file of one graph with train / val / test node masks is a transductive node
task: :mod:`geaet_dgl.data.nodes.node_graph` reads it. The format is described
for users in ``docs/your-own-graphs.md``.
"""
