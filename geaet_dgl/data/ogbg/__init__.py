"""OGB graph-level datasets through OGB's own DGL loaders, offline.

Each loader reads the folder OGB's loader reads under ``data_dir`` (the published
zip, unzipped and renamed as the module says) and never downloads: a missing file
is a one-line error saying where it goes.

:mod:`.graphprop`
    ogbg-molhiv / -molpcba / -ppa / -code2 (OGB's ``DglGraphPropPredDataset``):
    the files, the features and labels each becomes, the published splits.
:mod:`.code2`
    ogbg-code2's preparation as GraphGPS does it: ASTs clipped to 1,000 nodes,
    next-token and inverse edges, the subtoken vocabulary, the label rows.
:mod:`.pcqm4mv2`
    PCQM4Mv2 (OGB-LSC, ``ogb.lsc.DglPCQM4Mv2Dataset``) in GraphGPS's ``full``,
    ``subset`` and ``inference`` variants.
"""
