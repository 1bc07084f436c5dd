"""The heterograph GEAET model: learns a label that needs another node type, and not without its edges."""
import dgl
import pytest
import torch
import torch.nn.functional as F

from geaet_dgl.config import ConfigError, GEANetConfig, HeteroConfig, ModelConfig
from geaet_dgl.data.generated.hetero import author_paper_graphs
from geaet_dgl.models import build_model
from geaet_dgl.models.hetero_geaet import HeteroGEAET

SCHEMA = dict(ntypes=["author", "paper"], node_in_feats=[4, 4], etypes=["author:writes:paper", "paper:cites:paper"],
              edge_in_feats=[0, 0], target_ntype="paper")


def _config(**hetero):
    schema = HeteroConfig(**{**SCHEMA, **hetero})
    return ModelConfig(hidden_dim=16, num_layers=2, pe="none", out_feats=2, head="node", num_heads=2,
                       geanet=GEANetConfig(num_heads=2, unit_size=8), hetero=schema)


def _test_accuracy(without_writes: bool) -> float:
    torch.manual_seed(0)
    graphs, labels = author_paper_graphs(200, seed=0, without_writes=without_writes)
    model = build_model(_config())
    assert isinstance(model, HeteroGEAET)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(6):
        model.train()
        for start in range(0, 160, 20):
            out = model(dgl.batch(graphs[start:start + 20]))
            loss = F.cross_entropy(out, torch.cat(labels[start:start + 20]))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    with torch.no_grad():
        out = model(dgl.batch(graphs[160:]))
    return float((out.argmax(1) == torch.cat(labels[160:])).float().mean())


@pytest.mark.slow
def test_learns_a_paper_label_set_by_its_authors_and_not_without_the_writes_edges():
    assert _test_accuracy(without_writes=False) > 0.9
    assert _test_accuracy(without_writes=True) < 0.65  # chance is 0.5: half the papers of each graph per class


def test_graph_head_and_schema_checks():
    torch.manual_seed(0)
    config = _config()
    config.head = "graph"
    model = build_model(config)
    graphs, _ = author_paper_graphs(3, seed=1)
    assert model(dgl.batch(graphs)).shape == (3, 2)
    foreign = dgl.heterograph({("author", "writes", "paper"): ([0], [0])})
    with pytest.raises(ValueError, match="schema the model was trained on"):
        model(foreign)
    with pytest.raises(ConfigError, match="target_ntype"):
        _config(target_ntype="venue").validate()
    with pytest.raises(ConfigError, match="src:rel:dst"):
        _config(etypes=["author:writes:venue", "paper:cites:paper"]).validate()
    bad = _config()
    bad.pe = "rwse"
    with pytest.raises(ConfigError, match="model.pe=none"):
        bad.validate()
