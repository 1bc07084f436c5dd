"""Node-level tasks in the trainer: per-node labels, PATTERN's single logit, class-balanced accuracy."""
import pytest
import torch

from geaet_dgl.data import DataError, GraphDataset, LoadOptions, collate_for, collate_nodes
from geaet_dgl.models import build_model
from geaet_dgl.training import make_run_config
from geaet_dgl.training.evaluation import evaluate
from geaet_dgl.training.losses import get_loss
from geaet_dgl.training.metrics import MetricAccumulator, balanced_accuracy, predicted_labels
from geaet_dgl.data.model_fit import check_data_fits
from geaet_dgl.data.registry import load_with

TINY = {"model.hidden_dim": 16, "model.num_layers": 1, "model.geanet.unit_size": 4, "train.batch_size": 3}


@pytest.fixture(scope="module")
def pattern(tmp_path_factory):
    return load_with("pattern", LoadOptions(data_dir=tmp_path_factory.mktemp("pattern"), pe_k=2, rwse_k=16,
                                           limit_train=7, limit_val=4, limit_test=4, generate=True, progress=False))


def test_node_dataset_slices_and_collate_concatenates(pattern):
    ds = pattern.train
    assert ds.level == "node" and collate_for(ds) is collate_nodes
    sizes = [g.num_nodes() for g in ds.graphs]
    assert ds.labels.shape == (sum(sizes),)
    parts = [ds[i][1] for i in range(len(ds))]
    assert [p.shape[0] for p in parts] == sizes and torch.equal(torch.cat(parts), ds.labels)
    graph, labels = collate_nodes([ds[2], ds[0]])
    assert torch.equal(labels, torch.cat([parts[2], parts[0]])) and labels.shape == (graph.num_nodes(),)
    head = ds.subset(3)
    assert len(head) == 3 and torch.equal(head.labels, torch.cat(parts[:3]))


def test_node_labels_must_match_node_count(pattern):
    with pytest.raises(DataError, match="one label per node"):
        GraphDataset(pattern.train.graphs[:2], pattern.train.labels[:5], level="node")


def test_accumulator_balanced_accuracy_over_node_batches_by_hand():
    acc = MetricAccumulator("balanced_accuracy")
    # single-logit outputs (N, 1): predicted 1 iff sigmoid > 0.5
    acc.update(torch.tensor([[2.0], [-1.0], [0.5]]), torch.tensor([1, 0, 0]), 0.3, 1)
    acc.update(torch.tensor([[-3.0], [1.0]]), torch.tensor([1, 1]), 0.6, 1)
    # predictions 1,0,1,0,1; class 0 (nodes 1, 2): 1/2 right; class 1 (nodes 0, 3, 4): 2/3 right
    result = acc.compute()
    assert result["metric"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert result["loss"] == pytest.approx((0.3 * 3 + 0.6 * 2) / 5)  # weighted by nodes


def test_pattern_preset_outputs_one_logit_per_node_and_evaluates(pattern):
    run = make_run_config("pattern", overrides=TINY)
    assert run.model.head == "node" and run.model.out_feats == 1 and run.train.loss == "weighted_cross_entropy"
    check_data_fits(run.model, pattern)
    torch.manual_seed(0)
    model = build_model(run.model).eval()
    graph, labels = collate_nodes([pattern.val[i] for i in range(3)])
    with torch.no_grad():
        out = model(graph)
    assert out.shape == (graph.num_nodes(), 1)
    loss_fn = get_loss(run.train.loss)
    result = evaluate(model, pattern.val, loss_fn, "balanced_accuracy", 3, torch.device("cpu"))
    outputs, targets = [], []
    with torch.no_grad():
        for start in range(0, len(pattern.val), 3):
            g, y = collate_nodes([pattern.val[i] for i in range(start, min(start + 3, len(pattern.val)))])
            outputs.append(model(g))
            targets.append(y)
    expected = balanced_accuracy(predicted_labels(torch.cat(outputs)), torch.cat(targets))
    assert result["metric"] == pytest.approx(expected)


def test_root_head_reads_node_zero_of_each_graph():
    import dgl

    from geaet_dgl.models.heads import RootHead
    from geaet_dgl.nn.batch_layout import BatchLayout

    torch.manual_seed(0)
    head = RootHead(4, 3, num_layers=1)
    graph = dgl.batch([dgl.graph(([0], [1]), num_nodes=n) for n in (2, 5, 3)])
    h = torch.randn(10, 4)
    out = head(h, BatchLayout.from_graph(graph))
    torch.testing.assert_close(out, head.layer_post_mp(h[[0, 2, 7]]))
