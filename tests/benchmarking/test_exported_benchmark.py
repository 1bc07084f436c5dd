"""``geaet-dgl benchmark --exported``: the exported files' inference timed beside ours (and the reference's), after
their parity with our model on the benchmarked batches."""
import dgl
import pytest
import torch

from geaet_lab.benchmarking import exported, run_benchmark
from geaet_lab.benchmarking.exported import (ExportParityError, check_export_parity, check_formats,
                                             exported_contenders, exported_parity, interleaved_rates, load_exported)
from geaet_lab.benchmarking.jobs import ModelJob, Reference, Timing
from geaet_lab.benchmarking.report import format_report
from geaet_dgl.config import ConfigError
from tests.export.cases import FIRST_BATCH, SECOND_BATCH, prepared, random_graphs, save_case_checkpoint

try:
    import onnxruntime  # noqa: F401

    FORMATS = ("torchscript", "onnx")
except ImportError:
    FORMATS = ("torchscript",)

TINY = Timing(repeats=2, warmup=1, num_batches=1, threads=1, isolate=False, min_time=0.0)


def test_interleaved_rates_rotate_the_order_and_count_every_step():
    calls = []

    def step(name):
        return lambda batch: calls.append((name, batch))

    contenders = [(name, step(name), [f"{name}0", f"{name}1"]) for name in ("a", "b", "c")]
    rates = interleaved_rates(contenders, sizes=[4, 8], warmup=1, repeats=3)
    warm, timed = calls[:3], calls[3:]
    assert warm == [("a", "a0"), ("b", "b0"), ("c", "c0")]
    # round r starts with contender r mod 3 and steps batch (warmup + r) mod 2
    assert [name for name, _ in timed] == list("abc") + list("bca") + list("cab")
    assert [batch[1] for _, batch in timed] == list("111000111")
    assert set(rates) == {"a", "b", "c", "paired_ratio", "rounds"} and set(rates["paired_ratio"]) == {"b", "c"}
    assert all(rates[name]["min"] <= rates[name]["median"] <= rates[name]["max"] for name in "abc")
    assert rates["rounds"] == 3  # no min_time: exactly the repeats


def test_interleaved_rates_take_rounds_until_every_contender_ran_min_time(monkeypatch):
    spent = {"fast": 0.001, "slow": 0.004}
    clock = {"now": 0.0}

    def step(name):
        def run(batch):
            clock["now"] += spent[name]
        return run

    monkeypatch.setattr(exported, "time_call", lambda fn, device: (lambda before: (fn(), clock["now"] - before)[1])(
        clock["now"]))
    contenders = [(name, step(name), [0]) for name in ("fast", "slow")]
    rates = interleaved_rates(contenders, sizes=[2], warmup=0, repeats=3, min_time=0.05)
    # the fast side needs 50 rounds of 1 ms; the slow one would have stopped after 13
    assert rates["rounds"] == 50
    assert rates["fast"]["median"] == pytest.approx(2 / 0.001) and rates["slow"]["median"] == pytest.approx(2 / 0.004)
    assert interleaved_rates(contenders, sizes=[2], warmup=0, repeats=80, min_time=0.05)["rounds"] == 80
    monkeypatch.setattr(exported, "MAX_ROUNDS", 20)
    assert interleaved_rates(contenders, sizes=[2], warmup=0, repeats=3, min_time=10.0)["rounds"] == 20


@pytest.mark.slow
def test_the_files_agree_with_the_model_and_a_changed_model_is_refused(tmp_path):
    """Parity against an independent forward (model.eval() on DGL); weights changed after the export are caught."""
    run, model = save_case_checkpoint("zinc-gine", tmp_path / "best.pt")
    graphs = [dgl.batch(prepared(run, random_graphs(run.model, sizes, seed=4))) for sizes in (FIRST_BATCH,
                                                                                             SECOND_BATCH)]
    runners = load_exported(model, FORMATS, threads=1)
    assert [runner.fmt for runner in runners] == list(FORMATS)
    contenders, inputs = exported_contenders(runners, graphs)
    parity = exported_parity(model, runners, graphs, inputs)
    with torch.no_grad():
        for runner in runners:
            for graph, given in zip(graphs, inputs[runner.fmt]):
                assert torch.allclose(runner.run(given), model(graph), atol=1e-5, rtol=0)
    assert set(parity) == set(FORMATS) and max(parity.values()) <= 1e-5
    check_export_parity(parity)

    with torch.no_grad():  # the files keep the weights they were written with
        for parameter in model.parameters():
            parameter.add_(1e-2)
    changed = exported_parity(model, runners, graphs, inputs)
    assert min(changed.values()) > 1e-4
    with pytest.raises(ExportParityError, match="differs from our model by .* > 1e-05"):
        check_export_parity(changed)
    check_export_parity(changed, force=True)
    with pytest.raises(ExportParityError, match="holds NaN"):
        check_export_parity({"torchscript": float("nan")})


def test_what_exported_cannot_be_asked_of_is_refused():
    with pytest.raises(ConfigError, match="choose from torchscript, onnx"):
        check_formats(("tflite",))
    for job in (ModelJob(exported=("torchscript",), config_file="some.yaml"),
                ModelJob(exported=("torchscript",), throughput=False, breakdown=True),
                ModelJob(exported=("torchscript",), batch_sizes=()),):
        with pytest.raises(ConfigError, match="--exported times a preset's model in the step table"):
            run_benchmark(job, echo=None)


@pytest.mark.slow
def test_the_step_table_gains_the_exported_rows(tmp_path):
    report = run_benchmark(ModelJob(preset="zinc", batch_sizes=(2, 3), exported=FORMATS, timing=TINY), echo=None)
    exported = report["exported"]
    assert exported["formats"] == list(FORMATS) and [r["batch_size"] for r in exported["results"]] == [2, 3]
    for row in exported["results"]:
        assert row["infer_graphs_per_s"] > 0 and "ref_infer_graphs_per_s" not in row
        for fmt in FORMATS:
            assert row[f"{fmt}_infer_graphs_per_s"] > 0 and row[f"parity_{fmt}"] <= 1e-5
            assert row[f"ratio_{fmt}"] == pytest.approx(row["infer_graphs_per_s"] / row[f"{fmt}_infer_graphs_per_s"])
    text = format_report(report)
    assert "Inference beside the exported files" in text and "TorchScript g/s" in text


class _Batch:
    """Stands for the reference's PyG batch: our graph and its labels (``apply`` as PyG's)."""

    def __init__(self, graph, labels):
        self.graph, self.labels = graph, labels

    def apply(self, fn):
        return _Batch(fn(self.graph), fn(self.labels))


class _OursAsReference(torch.nn.Module):
    """Our model behind the reference's calling convention: ``forward(batch) -> (pred, label)``."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, batch):
        return self.model(batch.graph), batch.labels


@pytest.mark.slow
def test_beside_the_reference_the_files_join_its_rotation(monkeypatch):
    """With --against-pyg: ours, the reference's inference and the files in one rotation (the reference played
    by a copy of our model, so the test runs without the reference's packages)."""
    import copy

    from geaet_lab.benchmarking import parity as parity_module
    from geaet_lab.benchmarking.against_pyg import compare_with_reference
    from geaet_dgl.config.presets import get_preset
    from geaet_dgl.interop import reference_names
    from geaet_lab.interop import pyg_export
    from geaet_dgl.models import build_model

    def paired(ref_dir, key, seed=0):
        torch.manual_seed(seed)
        ours = build_model(get_preset(key).model)
        return _OursAsReference(copy.deepcopy(ours)), ours

    monkeypatch.setattr(parity_module, "paired_models", paired)
    monkeypatch.setattr(pyg_export, "to_pyg_batch", _Batch)
    def unprefixed(state):
        return {name.removeprefix("model."): value for name, value in state.items()}

    monkeypatch.setattr(parity_module, "reference_to_ours", unprefixed)
    monkeypatch.setattr(reference_names, "reference_to_ours", unprefixed)
    out = compare_with_reference(Reference("unused"), "mnist", batch_sizes=(2,), timing=TINY, exported=FORMATS)
    (row,) = out["exported"]["results"]
    (main,) = out["results"]
    assert row["infer_graphs_per_s"] == main["infer_graphs_per_s"]  # one measurement, both tables
    assert row["ref_infer_graphs_per_s"] == main["ref_infer_graphs_per_s"]
    for fmt in FORMATS:
        assert row[f"{fmt}_infer_graphs_per_s"] > 0 and row[f"parity_{fmt}"] <= 1e-5
