"""Load a dataset through the reference's own loader and save its graphs as plain tensors.

Run with the reference's Python (torch_geometric installed there), not imported
by our package: it imports nothing of ``geaet_dgl``::

    REF_PYTHON geaet_lab/interop/reference_dump.py --ref-dir REF_DIR \\
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

``geaet_lab.interop.graph_check`` compares the file with our DGL graphs.

With ``--node-set`` (a node configuration: PyG's ``Actor`` / ``WebKB`` /
``WikipediaNetwork`` processing, then ``prepare_splits``, which keeps column
``dataset.split_index`` of the ``(N, 10)`` masks) it writes the one graph:
``x`` (N, F), ``edge_index`` (2, E), ``y`` (N,), ``num_nodes``,
``train_mask`` / ``val_mask`` / ``test_mask`` (N,) bool, and ``eigvals`` (N, k)
when the graph carries ``EigVals``; ``geaet_lab.interop.node_check`` compares it.
"""
import argparse
import os
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref-dir", required=True)
    parser.add_argument("--cfg", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--node-set", action="store_true", help="one graph with split masks (a node configuration)")
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
    if args.node_set:
        result = _one_graph(dataset[0])
        _save(torch, result, args.out)
        print(f"wrote {args.out}: {result['num_nodes']} nodes, {result['edge_index'].shape[1]} edges, masks "
              + ", ".join(f"{s} {int(result[s + '_mask'].sum())}" for s in ("train", "val", "test")))
        return
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
    _save(torch, result, args.out)
    print(f"wrote {args.out}: " + ", ".join(f"{s} {len(result[s]['y'])}" for s in result))


def _one_graph(data) -> dict:
    """A node set's one PyG graph and its chosen split as plain tensors."""
    result = {"x": data.x, "edge_index": data.edge_index, "y": data.y.reshape(-1), "num_nodes": int(data.num_nodes)}
    for split in ("train", "val", "test"):
        result[f"{split}_mask"] = getattr(data, f"{split}_mask").bool()
    if getattr(data, "EigVals", None) is not None:
        result["eigvals"] = data.EigVals.reshape(data.num_nodes, -1)
    return result


def _save(torch, result: dict, out: str) -> None:
    """``torch.save`` to ``out`` through a temporary file: never a half-written dump."""
    tmp = out + ".tmp"
    torch.save(result, tmp)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
