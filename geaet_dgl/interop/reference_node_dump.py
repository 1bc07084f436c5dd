"""Load a node set through the reference's own loader and save its one graph as plain tensors.

Run with the reference's Python (torch_geometric installed there), not imported
by our package: it imports nothing of ``geaet_dgl``::

    REF_PYTHON geaet_dgl/interop/reference_node_dump.py --ref-dir REF_DIR \\
        --cfg OUT/reference/actor-GPS.yaml --out graph.pt dataset.dir OUT/pyg dataset.split_index 0

It calls the reference's ``load_dataset_master`` with the configuration file
and the ``KEY VALUE`` overrides, as its ``main.py`` does before training (PyG's
``Actor`` / ``WebKB`` / ``WikipediaNetwork`` processing, then
``prepare_splits``, which keeps column ``dataset.split_index`` of the
``(N, 10)`` masks), and writes ``x`` (N, F), ``edge_index`` (2, E), ``y`` (N,),
``train_mask`` / ``val_mask`` / ``test_mask`` (N,) bool, and ``eigvals``
(N, k) when the graph carries the Laplacian ``EigVals``.

``geaet_dgl.interop.node_check`` compares the file with our DGL graph.
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
    data = dataset[0]
    result = {"x": data.x, "edge_index": data.edge_index, "y": data.y.reshape(-1),
              "num_nodes": int(data.num_nodes)}
    for split in ("train", "val", "test"):
        result[f"{split}_mask"] = getattr(data, f"{split}_mask").bool()
    if getattr(data, "EigVals", None) is not None:
        result["eigvals"] = data.EigVals.reshape(data.num_nodes, -1)
    tmp = args.out + ".tmp"
    torch.save(result, tmp)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {result['num_nodes']} nodes, {result['edge_index'].shape[1]} edges, masks "
          + ", ".join(f"{s} {int(result[s + '_mask'].sum())}" for s in ("train", "val", "test")))


if __name__ == "__main__":
    main()
