"""The heterograph benchmark on tiny inputs: both local MPNNs measured, the same model otherwise."""
import pytest
from geaet_lab.benchmarking.hetero import hetero_config, hetero_table, measure_hetero, measure_hetero_pair
from geaet_lab.benchmarking.jobs import HeteroJob, Timing
from geaet_dgl.models import build_model


@pytest.mark.slow
def test_both_local_weights_are_measured_and_tabled():
    job = HeteroJob(batch_size=2, nodes_per_type=4, edges_per_relation=5, timing=Timing(threads=1, repeats=2, warmup=0))
    row = measure_hetero_pair(3, 2, job)
    for weights in ("relation", "typed"):
        for phase in ("train", "infer"):
            assert row[f"{weights}_{phase}_graphs_per_s"]["median"] > 0
        alone = HeteroJob(batch_size=2, nodes_per_type=4, edges_per_relation=5, timing=Timing(threads=1, repeats=1,
                                                                                              warmup=0))
        row[f"{weights}_peak_rss_mib"] = measure_hetero(weights, 3, 2, alone)["peak_rss_mib"]
    assert row["typed_over_relation_train"] > 0 and row["typed_over_relation_infer"] > 0
    assert hetero_table([row]).splitlines()[-1].startswith("| 3 | 2 | ")


def test_the_two_models_differ_only_in_the_local_mpnn():
    relation, typed = (build_model(hetero_config(2, 3, w)) for w in ("relation", "typed"))
    names = lambda m: {n for n, _ in m.named_parameters() if ".local_model." not in n}  # noqa: E731
    assert names(relation) == names(typed)
