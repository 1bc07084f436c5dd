"""Long Range Graph Benchmark (Dwivedi et al. 2022): Peptides, PascalVOC-SP / COCO-SP, PCQM-Contact.

Each loader reads LRGB's published files from ``data_dir`` and never downloads; the one-line
error for a missing file names the folder and the file (for Peptides and VOC / COCO also the URL,
DGL's ``dgl.data.lrgb`` ones; PCQM-Contact's files are LRGB's release, in the folder layout
GraphGPS downloads them to):

:mod:`.peptides`
    Peptides-Func / -Struct (graph-level): DGL's ``PeptidesFunctionalDataset`` /
    ``PeptidesStructuralDataset`` read a gzip CSV of SMILES with targets and a
    split pickle (``data_dir/Peptides-func_<hash>/``), checked against DGL's MD5s;
    molecules become graphs with OGB's ``smiles2graph``.
:mod:`.voc_coco`
    PascalVOC-SP / COCO-SP (node-level): DGL's ``VOCSuperpixelsDataset`` /
    ``COCOSuperpixelsDataset`` read the split pickles of
    ``{voc,coco}_superpixels_edge_wt_region_boundary.zip`` (SLIC compactness 30,
    region-boundary edges).
:mod:`.pcqm_contact`
    PCQM-Contact (link-level): LRGB's ``pcqm4m-contact.tsv.gz`` (CXSMILES with
    contact ids) and ``530k_shuffle_split_dict.pt`` in GraphGPS's folder layout,
    parsed here with RDKit and OGB's featurisers.
"""

from .pcqm_contact import load_pcqm_contact
from .peptides import load_peptides
from .voc_coco import load_lrgb_superpixels

__all__ = ["load_lrgb_superpixels", "load_pcqm_contact", "load_peptides"]
