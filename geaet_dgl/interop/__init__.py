"""Interoperability with the PyG reference (icm1018/GEAET): its data layout, its runs, side-by-side results."""
