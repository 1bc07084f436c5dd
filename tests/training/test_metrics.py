"""Metrics against hand computations (each with a class absent from the batch), sklearn and OGB's Evaluator."""
import pytest
import torch

from geaet_dgl.training.metrics import (MetricAccumulator, accuracy, average_precision, balanced_accuracy,
                                        f1_macro, is_improvement, mae, predicted_labels, roc_auc)

t = torch.tensor


def test_accuracy_by_hand():
    # 10 classes possible, only 0..2 occur: absent classes do not matter for accuracy.
    assert accuracy(t([0, 1, 2, 2]), t([0, 1, 1, 2])) == 0.75


def test_balanced_accuracy_by_hand_with_class_absent_from_targets():
    # Classes in targets or predictions: {0, 1, 2} -> K = 3. Class 1 has no targets (recall 0).
    # recall_0 = 2/3, recall_1 = 0, recall_2 = 1/2  -> (2/3 + 0 + 1/2) / 3 = 7/18.
    target = t([0, 0, 0, 2, 2])
    pred = t([0, 0, 1, 2, 0])
    assert balanced_accuracy(pred, target) == pytest.approx(7 / 18, abs=1e-15)


def test_balanced_accuracy_binary_by_hand():
    # PATTERN-like: class 0 recall 3/4, class 1 recall 1/2.
    assert balanced_accuracy(t([0, 0, 0, 1, 1, 0]), t([0, 0, 0, 0, 1, 1])) == pytest.approx(0.625, abs=1e-15)


def test_balanced_accuracy_class_absent_from_targets_and_predictions_is_left_out():
    # Labels 0 and 1 only (as a batch of a 3-class task that never shows class 2): mean of 2 recalls.
    assert balanced_accuracy(t([0, 1, 1, 1]), t([0, 0, 1, 1])) == pytest.approx((1 / 2 + 1) / 2)


def test_f1_macro_by_hand_with_predicted_only_class():
    # Labels present: {0, 1, 2}. c0: TP1 FP0 FN1 -> 2/3. c1: TP2 -> 1. c2: TP0 FP1 FN0 -> 0. Mean 5/9.
    assert f1_macro(t([0, 2, 1, 1]), t([0, 0, 1, 1])) == pytest.approx(5 / 9, abs=1e-15)


def test_f1_macro_skips_labels_absent_from_both():
    # Label 1 never occurs (between 0 and 2): averaged over {0, 2} only. c0: 2*1/(2+0+1)=2/3, c2: 2/(2+1)=2/3.
    assert f1_macro(t([0, 2, 2]), t([0, 0, 2])) == pytest.approx(2 / 3, abs=1e-15)


def test_mae_by_hand():
    assert mae(t([[1.0, 2.0], [3.0, 5.0]]), t([[1.5, 2.0], [2.0, 5.0]])) == pytest.approx(1.5 / 4)


def test_average_precision_by_hand():
    scores = t([[0.9, 0.3, 0.1], [0.8, 0.2, 0.4], [0.7, 0.1, 0.35], [0.6, 0.4, 0.8]])
    nan = float("nan")
    target = t([[1.0, 0.0, 0.0], [0.0, 0.0, nan], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    # Column 0: hits at ranks 1 and 3 -> 1/2 * 1 + 1/2 * 2/3 = 5/6.
    # Column 1: no positive -> left out. Column 2: NaN row dropped; ranks 0.8 (1), 0.35 (1), 0.1 (0) -> 1.
    assert average_precision(scores, target) == pytest.approx((5 / 6 + 1) / 2, abs=1e-15)


def test_average_precision_ties_are_one_threshold():
    # Scores 0.5, 0.5 tie: one PR point (P=1/2, R=1/2), then (P=2/3, R=1) -> 1/4 + 1/3.
    assert average_precision(t([0.5, 0.5, 0.2]), t([1.0, 0.0, 1.0])) == pytest.approx(7 / 12, abs=1e-15)


def test_average_precision_needs_a_usable_column():
    with pytest.raises(ValueError, match="positives and negatives"):
        average_precision(t([[0.1], [0.2]]), t([[0.0], [0.0]]))


def test_predicted_labels():
    assert predicted_labels(t([[0.1, 2.0, 0.3], [5.0, 0.0, 0.0]])).tolist() == [1, 0]
    # A single logit: sigmoid > 0.5, i.e. positive logits are class 1 (0 is not).
    assert predicted_labels(t([[-1.0], [0.0], [2.0]])).tolist() == [0, 0, 1]


def _ap_by_thresholds(scores, target):
    """AP counted here: at each distinct score from the highest down, precision times the recall gained."""
    pairs = list(zip(scores.tolist(), target.tolist()))
    positives = sum(y for _, y in pairs)
    total, previous_recall = 0.0, 0.0
    for threshold in sorted({s for s, _ in pairs}, reverse=True):
        chosen = [y for s, y in pairs if s >= threshold]
        recall = sum(chosen) / positives
        total += (recall - previous_recall) * sum(chosen) / len(chosen)
        previous_recall = recall
    return total


def test_average_precision_equals_the_threshold_count_with_ties():
    gen = torch.Generator().manual_seed(3)
    scores = torch.randint(0, 8, (150,), generator=gen).float()  # many ties
    target = (torch.rand(150, generator=gen) < 0.3).float()
    assert average_precision(scores, target) == pytest.approx(_ap_by_thresholds(scores, target), abs=1e-12)


def test_against_sklearn_on_random_data():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    gen = torch.Generator().manual_seed(0)
    target = torch.randint(0, 5, (200,), generator=gen)
    pred = torch.randint(0, 6, (200,), generator=gen)  # class 5 only among predictions
    assert f1_macro(pred, target) == pytest.approx(
        sklearn_metrics.f1_score(target, pred, average="macro", zero_division=0), abs=1e-12)
    assert accuracy(pred, target) == pytest.approx(sklearn_metrics.accuracy_score(target, pred))
    pred_in_range = pred.clamp(max=4)
    assert balanced_accuracy(pred_in_range, target) == pytest.approx(
        sklearn_metrics.balanced_accuracy_score(target, pred_in_range), abs=1e-12)
    # A class only predicted counts as recall 0 (accuracy_SBM), where sklearn's balanced accuracy leaves it out.
    assert balanced_accuracy(pred, target) == pytest.approx(
        sklearn_metrics.balanced_accuracy_score(target, pred) * 5 / 6, abs=1e-12)
    scores = torch.randn(200, 3, generator=gen).round(decimals=1)  # rounding makes ties
    labels = torch.randint(0, 2, (200, 3), generator=gen).float()
    expected = sum(sklearn_metrics.average_precision_score(labels[:, c], scores[:, c]) for c in range(3)) / 3
    assert average_precision(scores, labels) == pytest.approx(expected, abs=1e-12)
    binary = labels[:, 0].long()
    assert roc_auc(scores[:, 0], binary) == pytest.approx(sklearn_metrics.roc_auc_score(binary, scores[:, 0]),
                                                          abs=1e-12)


def test_multi_label_scores_equal_ogbs_evaluator_with_missing_labels():
    """ogbg-molpcba-like columns, NaN where unlabelled and one column with no positive: OGB's own eval_ap and
    eval_rocauc (the reference's), which leave out the unlabelled rows and the one-class column."""
    pytest.importorskip("ogb")
    from geaet_dgl.training.metrics import ogb_evaluate

    gen = torch.Generator().manual_seed(4)
    scores = torch.randn(120, 4, generator=gen).round(decimals=1).double()
    labels = (torch.rand(120, 4, generator=gen) < 0.4).double()
    labels[torch.rand(120, 4, generator=gen) < 0.2] = float("nan")
    labels[:, 3] = torch.where(torch.isnan(labels[:, 3]), labels[:, 3], torch.zeros(()).double())
    given = {"y_true": labels.numpy(), "y_pred": scores.numpy()}
    assert average_precision(scores, labels) == pytest.approx(ogb_evaluate("ap", given, num_tasks=4), abs=1e-12)
    assert roc_auc(scores, labels) == pytest.approx(ogb_evaluate("rocauc", given, num_tasks=4), abs=1e-12)


def test_accumulator_state_round_trip_equals_uninterrupted():
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 3, generator=gen), torch.randint(0, 3, (4,), generator=gen)) for _ in range(3)]
    whole = MetricAccumulator("f1_macro")
    for out, y in batches:
        whole.update(out, y, loss=float(out.sum()), num_graphs=4)
    first = MetricAccumulator("f1_macro")
    for out, y in batches[:2]:
        first.update(out, y, loss=float(out.sum()), num_graphs=4)
    resumed = MetricAccumulator("accuracy")
    resumed.load_state_dict(first.state_dict())
    resumed.update(*batches[2], loss=float(batches[2][0].sum()), num_graphs=4)
    assert resumed.compute() == whole.compute()
    assert resumed.num_graphs == 12


def test_accumulator_weights_loss_by_targets():
    acc = MetricAccumulator("mae")
    acc.update(t([[1.0]]), t([[0.0]]), loss=1.0, num_graphs=1)
    acc.update(t([[0.0], [0.0], [0.0]]), t([[0.0], [0.0], [0.0]]), loss=0.0, num_graphs=3)
    assert acc.compute() == {"loss": 0.25, "metric": 0.25}


def test_is_improvement_direction_and_ties():
    assert is_improvement("accuracy", 0.5, None)
    assert is_improvement("accuracy", 0.6, 0.5) and not is_improvement("accuracy", 0.5, 0.5)
    assert is_improvement("mae", 0.2, 0.3) and not is_improvement("mae", 0.3, 0.3)
