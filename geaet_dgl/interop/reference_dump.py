"""Load a dataset through the reference's own loader and save its graphs as plain tensors.

Run with the reference's Python (torch_geometric installed there), not imported
by our package: it imports nothing of ``geaet_dgl``::

    REF_PYTHON geaet_dgl/interop/reference_dump.py --ref-dir REF_DIR \\
        --cfg REF_DIR/configs/GEAET/mnist.yaml --out graphs.pt dataset.dir DIR/pyg

It calls the reference's ``load_dataset_master`` with its configuration file
and the given ``KEY VALUE`` overrides (exactly what its ``main.py`` does before
training: PyG's ``GNNBenchmarkDataset`` processing, ``cat(x, pos)``, the cast to
float and the positional-encoding statistics), then writes, per split
(train/val/test), the graphs concatenated in the reference's order:

- ``x`` (sum N, F), ``edge_index`` (2, sum E) with each graph's own node ids,
  ``edge_attr`` (sum E, ...), ``y`` (G,), ``num_nodes`` (G,), ``num_edges`` (G,)
- ``eigvals`` (sum N, k) when the graphs carry ``EigVals`` (NaN padding kept),
  ``eigvecs`` (sum N, k) when they carry ``EigVecs``.

``geaet_dgl.interop.graph_check`` compares the file with our DGL graphs.
"""
import argparse
import os
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref-dir", required=True)
    parser.add_argument("--cfg", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("opts", nargs=argparse.REMAINDER, help="KEY VALUE overrides of the configuration")
    args = parser.parse_args(argv)

    sys.modules.setdefault("outdated", None)  # ogb's update check can hang the import
    sys.path.insert(0, os.path.abspath(args.ref_dir))
    import torch
    import GEAET  # noqa: F401  (registers the reference's modules)
    from torch_geometric.graphgym.config import cfg, set_cfg
    from GEAET.loader.master_loader import load_dataset_master

    set_cfg(cfg)
    cfg.merge_from_file(args.cfg)
    cfg.merge_from_list(args.opts)
    dataset = load_dataset_master(cfg.dataset.format, cfg.dataset.name, cfg.dataset.dir)
    result = {}
    splits = ("train", "val", "test")
    split_indices = {split: [int(i) for i in dataset.data[f"{split}_graph_index"]] for split in splits}
    for split in splits:  # as graphgym's create_loader: read the split indices, then drop them from the data
        delattr(dataset.data, f"{split}_graph_index")
    for split in splits:
        graphs = [dataset.get(i) for i in split_indices[split]]
        fields = {
            "x": torch.cat([g.x for g in graphs]),
            "edge_index": torch.cat([g.edge_index for g in graphs], dim=1),
            "edge_attr": torch.cat([g.edge_attr for g in graphs]),
            "y": torch.cat([g.y.reshape(-1) for g in graphs]),
            "num_nodes": torch.tensor([g.num_nodes for g in graphs]),
            "num_edges": torch.tensor([g.edge_index.shape[1] for g in graphs]),
        }
        if all(getattr(g, "EigVals", None) is not None for g in graphs):
            fields["eigvals"] = torch.cat([g.EigVals.reshape(g.num_nodes, -1) for g in graphs])
        if all(getattr(g, "EigVecs", None) is not None for g in graphs):
            fields["eigvecs"] = torch.cat([g.EigVecs for g in graphs])
        result[split] = fields
    tmp = args.out + ".tmp"
    torch.save(result, tmp)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: " + ", ".join(f"{s} {len(result[s]['y'])}" for s in result))


if __name__ == "__main__":
    main()
