"""The heterograph benchmark on tiny inputs: both local MPNNs measured, the same model otherwise."""
from geaet_dgl.benchmarking.hetero import hetero_config, hetero_table, measure_hetero
from geaet_dgl.models import build_model


def test_both_local_weights_are_measured_and_tabled():
    rows = [measure_hetero(weights, num_etypes=3, num_ntypes=2, batch_size=2, nodes_per_type=4,
                           edges_per_relation=5, repeats=1, warmup=0) for weights in ("relation", "typed")]
    for row in rows:
        assert row["train_graphs_per_s"]["median"] > 0 and row["infer_graphs_per_s"]["median"] > 0
        assert row["peak_rss_mib"] > 0
    table = hetero_table(rows)
    assert "| 3 | 2 | relation |" in table and "| 3 | 2 | typed |" in table


def test_the_two_models_differ_only_in_the_local_mpnn():
    relation, typed = (build_model(hetero_config(2, 3, w)) for w in ("relation", "typed"))
    names = lambda m: {n for n, _ in m.named_parameters() if ".local_model." not in n}  # noqa: E731
    assert names(relation) == names(typed)
