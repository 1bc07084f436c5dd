"""predict's rows for every kind of output, against a direct computation; the checks on new graphs."""
import csv
import io
import math

import dgl
import pytest
import torch

from geaet_dgl.config import ConfigError
from geaet_dgl.data import DataError
from geaet_dgl.data.own_files.graph_files import FeatureSpec, conform_graphs
from geaet_dgl.config.presets import get_preset
from geaet_dgl.training import make_run_config
from geaet_dgl.scoring.predict import OutputKind, _csv_text, feature_spec, output_kind, prediction_rows

OUTPUTS = [torch.tensor([0.3, -1.2, 2.0]), torch.tensor([-0.5, 0.1, 0.0])]


def test_class_rows_hold_softmax_and_argmax():
    rows = prediction_rows(OUTPUTS, OutputKind("graph", "classes", 3))
    for index, (row, logits) in enumerate(zip(rows, OUTPUTS)):
        exp = [math.exp(v) for v in logits.tolist()]
        assert row["index"] == index and row["predicted"] == max(range(3), key=lambda c: logits[c])
        assert row["probabilities"] == pytest.approx([e / sum(exp) for e in exp], rel=1e-6)


def test_single_logit_binary_and_multilabel_rows_use_the_sigmoid():
    logit = torch.tensor([0.7])
    row = prediction_rows([logit], OutputKind("graph", "binary", 1))[0]
    p = 1 / (1 + math.exp(-0.7))
    assert row["predicted"] == 1 and row["probabilities"] == pytest.approx([1 - p, p], rel=1e-6)
    row = prediction_rows(OUTPUTS[:1], OutputKind("graph", "multilabel", 3))[0]
    probs = [1 / (1 + math.exp(-v)) for v in OUTPUTS[0].tolist()]
    assert row["predicted"] == [0, 2] and row["probabilities"] == pytest.approx(probs, rel=1e-6)
    text = _csv_text([row], OutputKind("graph", "multilabel", 3))
    parsed = list(csv.DictReader(io.StringIO(text)))[0]
    assert parsed["predicted"] == "0;2" and float(parsed["prob_1"]) == row["probabilities"][1]


def test_regression_and_node_rows():
    kind = OutputKind("node", "regression", 3)
    rows = prediction_rows([torch.stack(OUTPUTS)], kind)
    assert [(r["graph"], r["node"]) for r in rows] == [(0, 0), (0, 1)]
    assert rows[1]["value"] == pytest.approx(OUTPUTS[1].tolist())
    header = _csv_text(rows, kind).splitlines()[0]
    assert header == "graph,node,value_0,value_1,value_2"


@pytest.mark.parametrize("preset, expected", [("pattern", ("node", "binary", 1)), ("peptides-func", ("graph",
                         "multilabel", 10)), ("zinc", ("graph", "regression", 1)), ("mnist", ("graph", "classes", 10))])
def test_output_kind_of_the_presets(preset, expected):
    run = make_run_config("synthetic", preset)
    assert tuple(vars(output_kind(run)).values()) == expected


def test_link_checkpoints_are_refused():
    with pytest.raises(ConfigError, match="scores node pairs .* score it with `geaet-dgl eval`"):
        output_kind(make_run_config("synthetic", "pcqm-contact"))


def test_feature_spec_of_an_embedding_model_refuses_unknown_types():
    spec = feature_spec(get_preset("zinc").model)
    assert spec == FeatureSpec(1, (28,), 1, (4,))
    g = dgl.graph(([0, 1], [1, 2]))
    g.ndata["feat"] = torch.tensor([3, 30, 1])
    g.edata["feat"] = torch.tensor([[0], [1]])
    with pytest.raises(DataError, match=r"new.bin: graph 0 has type 30 in column 0 of ndata\['feat'\] \(node 1\); "
                                        r"the model knows types 0..27"):
        conform_graphs([g], "new.bin", spec)
    g.ndata["feat"] = torch.tensor([3.0, 2.0, 1.0])
    with pytest.raises(DataError, match="the model embeds integer types"):
        conform_graphs([g], "new.bin", spec)
