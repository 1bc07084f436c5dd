"""Checks every layer test runs: finite gradients, save/load, node permutation, batched == single graphs.

``call(module, graph, node_feat, edge_feat) -> (node_out, edge_out)``, the branch convention.
"""
import io

import dgl
import torch


def branch_call(module, graph, x, e):
    return module(graph, x, e)


def assert_gradients(module, graph, x, e, call=branch_call):
    """Every parameter and both inputs get a finite gradient from the summed outputs."""
    module.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_()
    e = e.detach().clone().requires_grad_() if e is not None else None
    out_x, out_e = call(module, graph, x, e)
    loss = (out_x * torch.linspace(-1, 1, out_x.numel()).view_as(out_x)).sum()
    if out_e is not None and out_e is not e:
        loss = loss + (out_e * out_e).sum()
    loss.backward()
    for name, p in module.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert x.grad is not None and torch.isfinite(x.grad).all()


def assert_save_load(module, fresh, graph, x, e, call=branch_call):
    """``fresh`` (a newly built module of the same kind) loads ``module``'s saved state and gives its outputs."""
    module.eval()
    buf = io.BytesIO()
    torch.save(module.state_dict(), buf)
    buf.seek(0)
    fresh.load_state_dict(torch.load(buf))
    fresh.eval()
    with torch.no_grad():
        a, b = call(module, graph, x, e), call(fresh, graph, x, e)
    torch.testing.assert_close(a[0], b[0], rtol=0, atol=0)
    if a[1] is not None:
        torch.testing.assert_close(a[1], b[1], rtol=0, atol=0)


def permuted(graph: dgl.DGLGraph, perm: torch.Tensor) -> dgl.DGLGraph:
    """The graph whose node ``i`` is ``graph``'s node ``perm[i]``; edges keep their order, the batch its sizes."""
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.numel())
    src, dst = graph.edges()
    out = dgl.graph((inverse[src], inverse[dst]), num_nodes=graph.num_nodes())
    out.set_batch_num_nodes(graph.batch_num_nodes())
    out.set_batch_num_edges(graph.batch_num_edges())
    return out


def within_graph_permutation(graph: dgl.DGLGraph, seed: int = 0) -> torch.Tensor:
    """A random renumbering of the nodes that keeps every node in its own graph of the batch."""
    gen = torch.Generator().manual_seed(seed)
    parts, start = [], 0
    for n in graph.batch_num_nodes().tolist():
        parts.append(start + torch.randperm(n, generator=gen))
        start += n
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)


def assert_permutation_equivariant(module, graph, x, e, call=branch_call, atol=1e-5, seed=0):
    """Renumbering the nodes (within their graphs) renumbers the node outputs; edge outputs stay (eval mode)."""
    module.eval()
    perm = within_graph_permutation(graph, seed)
    with torch.no_grad():
        out_x, out_e = call(module, graph, x, e)
        perm_x, perm_e = call(module, permuted(graph, perm), x[perm], e)
    torch.testing.assert_close(perm_x, out_x[perm], atol=atol, rtol=1e-5)
    if out_e is not None:
        torch.testing.assert_close(perm_e, out_e, atol=atol, rtol=1e-5)


def assert_batched_equals_single(module, graphs, dim, call=branch_call, atol=1e-5):
    """Eval mode: the batch's outputs are the per-graph outputs, concatenated (graphs carry ndata/edata 'h')."""
    module.eval()
    bg = dgl.batch(graphs)
    with torch.no_grad():
        x, e = call(module, bg, bg.ndata["h"], bg.edata["h"])
        singles = [call(module, g, g.ndata["h"], g.edata["h"]) for g in graphs]
    torch.testing.assert_close(x, torch.cat([s[0] for s in singles]), atol=atol, rtol=1e-5)
    if e is not None:
        torch.testing.assert_close(e, torch.cat([s[1] for s in singles]), atol=atol, rtol=1e-5)
