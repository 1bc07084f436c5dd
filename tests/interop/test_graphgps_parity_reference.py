"""Parity with the reference, in float64, on 16 graphs, for every GraphGPS file (configs/GPS/) the reference can
build: what ``benchmark --against-pyg REF --config FILE`` checks before it times anything.

Both models get the same weights and the same batch (16 synthetic graphs shaped like the file's dataset, at most
200 nodes each; a node set's one graph at 1,000 nodes), the reference's carrying what its own loader computes,
but ours for the float32 statistics the two sides compute by different routes (RWSE, HKdiagSE; see
geaet_lab/interop/reference_loader.py): outputs agree to 1e-10 and gradient entries to 1e-9 (1.6e-10 at most,
SignNet's DeepSets on ZINC; figures per file in docs/reference-interop.md). A gradient's difference relative to
its norm is rounding too, but relative to the floor of 1e-6 of the largest gradient norm where the
exact gradient is 0 (a bias that a BatchNorm follows), so it is held to 1e-7. The same comparison on the
reference's own float32 RWSE is bounded by those inputs (1.5e-7 on ZINC's) and only reported.

Skipped unless torch_geometric imports and the reference checkout is present (``GEAET_REF_DIR``, default
/work/GEAET; run in the reference's environment).
"""
import os
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.reference, pytest.mark.slow]

from .test_param_counts_reference import BUILDABLE, REF_DIR  # noqa: E402  (skips without torch_geometric)

CONFIGS = yaml.safe_load((Path(__file__).parent / "graphgps_configs.yaml").read_text())
#: files the comparison cannot check yet, and why (strict: a file that passes is taken off this list)
NOT_YET = {
    "ogbg-code2-GPS.yaml": "the name table lacks the reference's ASTNode/ASTEdge encoders and ogb_code_graph head",
    "pcqm-contact-GPS.yaml": "its inductive_edge head reads edge_index_labeled, which the comparison's batches lack",
    "ogbg-ppa-GPS.yaml": "every node's input is the same vector, so layer 0's A.weight has an exact-zero gradient "
                         "whose float64 rounding over 3,105 nodes is 1.2e-4 of the relative measure's floor",
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(reason=NOT_YET[name], strict=True))
                                  if name in NOT_YET else name for name in BUILDABLE])
def test_parity_on_sixteen_graphs_in_float64(name, tmp_path):
    if not os.path.isdir(os.path.join(REF_DIR, "GEAET")):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    from geaet_lab.benchmarking.against_pyg import config_parity
    from geaet_lab.benchmarking.config_subject import config_subject
    from geaet_lab.benchmarking.inputs import is_transductive

    path = tmp_path / name
    path.write_text(yaml.safe_dump(CONFIGS[name]))
    subject = config_subject(path)
    one_graph = is_transductive(subject.dataset)
    graph, labels = subject.batches(16, 1, seed=0, max_nodes=1000 if one_graph else 200)[0]
    assert graph.batch_size == (1 if one_graph else 16)
    parity, own = config_parity(subject, REF_DIR, graph, labels)
    assert parity.dtype == "float64"
    assert max(parity.eval_output_max_abs_diff, parity.train_output_max_abs_diff) < 1e-10, parity.as_dict()
    assert parity.grad_max_abs_diff < 1e-9, parity.as_dict()  # SignNet's DeepSets on ZINC: 1.6e-10
    assert parity.grad_max_rel_diff < 1e-7, parity.as_dict()
    model = subject.model
    unread = model.graphormer.spatial_types * model.num_heads ** 2 \
        if model.attention == "biased_transformer" and not model.graphormer.num_edge_types else 0
    assert parity.params_ours + unread == parity.params_reference
    shared = [field for field, kind in (("pestat_RWSE", "rwse"), ("pestat_HKdiagSE", "hkdiagse"))
              if kind in (model.pe, model.se)]
    if not shared:
        assert own is None
        return
    # on the reference's own float32 statistics: as far apart as float32 rounding of those inputs leaves them
    assert own["fields"] == shared and 0 < own["input_max_abs_diff"] < 1e-6
    assert own["parity"]["max_abs_diff"] < 1e-5
