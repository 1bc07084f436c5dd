"""Small heterographs for the heterograph tests: papers, authors and venues."""
import dgl
import torch


def paper_graph(num_papers: int, num_authors: int, seed: int, venues: int = 2) -> dgl.DGLGraph:
    """Authors write papers, papers cite papers, papers appear at venues (and back)."""
    gen = torch.Generator().manual_seed(seed)
    writes = (torch.randint(0, num_authors, (2 * num_papers,), generator=gen),
              torch.arange(num_papers).repeat(2))
    cites = (torch.randint(0, num_papers, (num_papers,), generator=gen),
             torch.randint(0, num_papers, (num_papers,), generator=gen))
    at = (torch.arange(num_papers), torch.randint(0, venues, (num_papers,), generator=gen))
    return dgl.heterograph({
        ("author", "writes", "paper"): writes,
        ("paper", "cites", "paper"): cites,
        ("paper", "at", "venue"): at,
        ("venue", "hosts", "paper"): (at[1], at[0]),
    }, num_nodes_dict={"author": num_authors, "paper": num_papers, "venue": venues})


def no_authors_no_edges(num_papers: int) -> dgl.DGLGraph:
    """The schema of :func:`paper_graph` with no authors, no venues and no edges."""
    relations = paper_graph(1, 1, 0).canonical_etypes
    return dgl.heterograph({r: ([], []) for r in relations}, {"author": 0, "paper": num_papers, "venue": 0})


def hetero_cases():
    """Name -> list of heterographs (a batch is built from the list)."""
    return {
        "empty_types": [paper_graph(3, 2, 4), no_authors_no_edges(2), paper_graph(4, 3, 5)],
        "single": [paper_graph(5, 4, 0)],
        "unequal_batch": [paper_graph(5, 4, 1), paper_graph(2, 6, 2, venues=1), paper_graph(7, 3, 3)],
    }
