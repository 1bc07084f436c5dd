"""ogbg-code2 as GraphGPS prepares it: OGB's processing runs on a fixture in OGB's raw layout; clipping, edge
augmentation, vocabulary and target encoding equal GraphGPS's own functions (its ogbg_code2_utils.py, read from
a GraphGPS checkout); the AST encoder, sequence head, loss and OGB-Evaluator F1 against independent computations."""
import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from ogb.graphproppred import Evaluator

from geaet_dgl.config import ModelConfig
from geaet_dgl.data import load_dataset
from geaet_dgl.data.ogbg import code2
from geaet_dgl.models.encoders import ASTNodeEncoder
from geaet_dgl.models.heads import MAX_SEQ_LEN, SequenceHead
from geaet_dgl.nn.batch_layout import BatchLayout
from geaet_dgl.training.losses import subtoken_cross_entropy
from geaet_dgl.training.metrics import MetricAccumulator, f1_subtoken
from tests.data.fixtures_ogbg import SPLIT, write_code2_fixture

GRAPHGPS_UTILS = Path(os.environ.get("GRAPHGPS_DIR", "/work/GraphGPS")) / "graphgps/loader/ogbg_code2_utils.py"


def _graphgps_utils():
    if not GRAPHGPS_UTILS.is_file():
        pytest.skip(f"GraphGPS's {GRAPHGPS_UTILS} is not here (set GRAPHGPS_DIR)")
    spec = importlib.util.spec_from_file_location("graphgps_code2_utils", GRAPHGPS_UTILS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # numpy and torch only
    return module


@pytest.fixture(scope="module")
def fixture(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("code2")
    written = write_code2_fixture(data_dir)
    written["data_dir"] = data_dir
    return written, load_dataset("ogbg-code2", data_dir, progress=False)


def test_vocabulary_and_targets_equal_graphgps(fixture, monkeypatch):
    utils = _graphgps_utils()
    written, splits = fixture
    assert splits.num_classes == code2.NUM_VOCAB + 2
    monkeypatch.setattr(code2, "NUM_VOCAB", 6)  # fewer than the training names' subtokens: some become __UNK__
    splits = load_dataset("ogbg-code2", written["data_dir"], progress=False)
    train_names = [written["names"][i] for i in SPLIT["train"]]
    vocab2idx, _ = utils.get_vocab_mapping(train_names, 6)
    assert code2.vocabulary(train_names, 6) == vocab2idx and splits.num_classes == 8
    for part, theirs in (("train", "train"), ("val", "valid"), ("test", "test")):
        labels = getattr(splits, part).labels
        for row, index in zip(labels, SPLIT[theirs]):
            name = written["names"][index]
            expected = utils.encode_seq_to_arr(name, vocab2idx, MAX_SEQ_LEN)[0]
            assert torch.equal(row[:MAX_SEQ_LEN].long(), expected)
            reference = [splits.vocabulary[int(v)] for v in row[MAX_SEQ_LEN:][~torch.isnan(row[MAX_SEQ_LEN:])]]
            assert reference == name  # the whole name, beyond 5 subtokens and outside the vocabulary too


@pytest.mark.parametrize("size_limit", [1000, 9])
def test_clip_and_augment_equal_graphgps(fixture, size_limit):
    utils = _graphgps_utils()
    written, _ = fixture
    import dgl

    for index in (0, 5, 11):
        edges, depth = written["trees"][index]
        n = written["sizes"][index]
        start = sum(written["sizes"][:index])
        attributed = torch.as_tensor(written["attributed"][start:start + n])
        graph = dgl.graph((torch.from_numpy(edges[:, 0]), torch.from_numpy(edges[:, 1])), num_nodes=n)
        graph.ndata["feat"] = torch.as_tensor(written["feat"][start:start + n])
        graph.ndata["is_attributed"] = attributed[:, None]
        graph.ndata["depth"] = torch.as_tensor(depth)[:, None]
        ours = code2.clip_and_augment(graph, size_limit)
        keep = min(n, size_limit)  # GraphGPS's clip_graphs_to_size: the first nodes, the edges among them
        edge_index = torch.from_numpy(edges.T)
        edge_index = edge_index[:, (edge_index < keep).all(dim=0)]
        data = SimpleNamespace(edge_index=edge_index, node_is_attributed=attributed[:keep, None])
        theirs = utils.augment_edge(data)
        assert ours.num_nodes() == keep
        assert torch.equal(torch.stack(ours.edges()), theirs.edge_index)
        assert torch.equal(ours.edata["feat"], theirs.edge_attr.long())
        assert torch.equal(ours.ndata["feat"][:, 2], torch.as_tensor(depth[:keep]))


def test_ast_encoder_caps_depth_and_sums_three_embeddings():
    torch.manual_seed(0)
    encoder = ASTNodeEncoder(code2.AST_VOCAB_SIZES, 8)
    feat = torch.tensor([[3, 100, 0], [97, 10029, 20], [5, 7, 35]])
    expected = torch.stack([encoder.type_encoder.weight[t] + encoder.attribute_encoder.weight[a]
                            + encoder.depth_encoder.weight[min(d, code2.MAX_DEPTH)] for t, a, d in feat.tolist()])
    assert torch.allclose(encoder(feat), expected)
    assert sum(p.numel() for p in encoder.parameters()) == (98 + 10_030 + 21) * 8  # GraphGPS's ASTNodeEncoder


def test_sequence_head_loss_and_f1():
    torch.manual_seed(0)
    vocab = 7  # 5 subtokens, __UNK__ = 5, __EOS__ = 6
    head = SequenceHead(4, vocab)
    node_feat = torch.randn(9, 4)
    import dgl

    layout = BatchLayout.from_graph(dgl.batch([dgl.graph(([], []), num_nodes=4), dgl.graph(([], []), num_nodes=5)]))
    output = head(node_feat, layout)
    pooled = torch.stack([node_feat[:4].mean(0), node_feat[4:].mean(0)])
    for p, linear in enumerate(head.graph_pred_linear_list):
        assert torch.allclose(output[:, p * vocab:(p + 1) * vocab], linear(pooled), atol=1e-6)
    target = torch.tensor([[1, 2, 6, 6, 6, 1, 2, 8, float("nan")], [0, 0, 3, 5, 6, 0, 3, 9, 4]])
    logits = output.view(2, MAX_SEQ_LEN, vocab)
    expected = sum(F.cross_entropy(logits[:, p], target[:, p].long()) for p in range(MAX_SEQ_LEN)) / MAX_SEQ_LEN
    assert torch.allclose(subtoken_cross_entropy(output, target), expected)
    # predictions decoded up to __EOS__, compared as sets with the whole reference name by OGB's Evaluator
    crafted = torch.full((2, MAX_SEQ_LEN, vocab), -5.0)
    for row, ids in enumerate([[1, 8 % vocab, 6, 2, 2], [0, 3, 5, 4, 4]]):
        crafted[row, torch.arange(MAX_SEQ_LEN), torch.tensor(ids)] = 5.0
    crafted = crafted.reshape(2, -1)
    words = {i: f"w{i}" for i in range(10)}
    words[5] = "__UNK__"
    refs = [["w1", "w2", "w8"], ["w0", "w3", "w9", "w4"]]
    preds = [["w1", "w1"], ["w0", "w3", "__UNK__", "w4", "w4"]]
    expected_f1 = Evaluator("ogbg-code2").eval({"seq_ref": refs, "seq_pred": preds})["F1"]
    assert f1_subtoken(crafted, target) == pytest.approx(expected_f1)
    accumulator = MetricAccumulator("f1_subtoken")
    accumulator.update(crafted[:1], target[:1], 1.0, 1)
    accumulator.update(crafted[1:], target[1:], 1.0, 1)
    assert accumulator.compute()["metric"] == pytest.approx(expected_f1)
    with pytest.raises(ValueError, match="head_layers=1"):
        SequenceHead(4, vocab, num_layers=2)


def test_code2_preset_has_graphgps_sizes():
    from geaet_dgl.models.geaet import build_head
    from geaet_dgl.config.presets import get_preset

    model = get_preset("ogbg-code2").model
    assert isinstance(model, ModelConfig) and model.out_feats == code2.NUM_VOCAB + 2
    head = build_head(model)
    assert sum(p.numel() for p in head.parameters()) == MAX_SEQ_LEN * (256 * 5_002 + 5_002)
