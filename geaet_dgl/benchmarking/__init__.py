"""Throughput benchmarks and the side-by-side comparison with the PyG reference."""
