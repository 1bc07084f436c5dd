"""One graph across processes and machines: DGL's distributed engine (``dgl.distributed``).

:mod:`.partition` cuts one graph (with its features, labels, masks and
positional encodings, computed once before) into partitions with DGL's
``partition_graph``; :mod:`.engine` holds DGL's launch conventions (the
``DGL_*`` environment of graph servers and trainers, ``ip_config``);
:mod:`.processes` starts and stops the servers and trainers of one machine;
:mod:`.worker` is what those processes run; :mod:`.trainer` trains GEAET
on mini-batches sampled from the partitions. The guide is
docs/distributed.md.
"""
