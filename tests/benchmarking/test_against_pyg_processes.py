"""``benchmark --against-pyg``: each batch size measured in a process where no other batch size ran."""
import os

import pytest

from geaet_lab.benchmarking import against_pyg, worker
from geaet_lab.benchmarking.against_pyg import ParityError, compare_in_fresh_processes
from geaet_lab.benchmarking.jobs import Reference, Timing
from geaet_lab.benchmarking.subject import Subject

REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/ref/GEAET")
TIMING = Timing(repeats=2, warmup=0, threads=1, num_batches=1, min_time=0.0)


def _row(batch_size):
    return {"batch_size": batch_size, "ratio_train": 1.0, "ratio_infer": 1.0}


def _report(batch_size, fold_diff, exported=False):
    report = {"config": {"threads": 1}, "parity": {"checked_diff": 0.0}, "parity_max_abs_diff": 0.0,
              "fold_max_abs_diff": fold_diff, "results": [_row(batch_size)]}
    if exported:
        report["exported"] = {"formats": ["torchscript"], "results": [{"batch_size": batch_size}]}
    return report


def test_the_first_batch_size_runs_here_and_every_other_in_a_fresh_process(monkeypatch):
    here, started, lines = [], [], []

    def in_this_process(reference, subject, batch_sizes, timing, fold, progress, exported, parity_batch_size=None):
        here.append((tuple(batch_sizes), parity_batch_size))
        progress("parity on a batch of 16 graphs")
        progress(f"  batch {batch_sizes[0]}: train ours ...")
        return _report(batch_sizes[0], 1e-12, exported=bool(exported))

    def fresh(task, kwargs, **_):
        started.append((task, kwargs))
        return dict(_report(kwargs["batch_size"], 3e-12, exported=True),
                    progress=["parity on a batch of 16 graphs", f"  batch {kwargs['batch_size']}: train ours ..."])

    monkeypatch.setattr(against_pyg, "compare_with_reference", in_this_process)
    monkeypatch.setattr(worker, "run_isolated", fresh)
    reference = Reference("/ref", config_file="zinc-GPS.yaml")
    subject = Subject.from_preset("zinc")
    out = compare_in_fresh_processes(reference, subject, (64, 16, 128), TIMING, fold=True, progress=lines.append,
                                     exported=("torchscript",))
    assert here == [((64,), 16)]  # the parity batch of the smallest batch size, in every process
    assert [task for task, _ in started] == ["against_pyg"] * 2
    assert [kwargs["batch_size"] for _, kwargs in started] == [16, 128]
    for _, kwargs in started:  # what the measuring process needs to measure the same thing
        assert kwargs["reference"] == reference and kwargs["timing"] == TIMING and kwargs["fold"] is True
        assert kwargs["exported"] == ["torchscript"] and kwargs["parity_batch_size"] == 16
        assert {k: kwargs[k] for k in subject.worker_kwargs()} == subject.worker_kwargs()
    assert [row["batch_size"] for row in out["results"]] == [64, 16, 128]
    assert [row["batch_size"] for row in out["exported"]["results"]] == [64, 16, 128]
    assert out["fold_max_abs_diff"] == 3e-12  # the largest of the processes'
    # the checks' lines once (from this process), each batch size's line once
    assert sum("parity" in line for line in lines) == 1
    assert [line for line in lines if line.startswith("  batch ")] == [
        "  batch 64: train ours ...", "  batch 16: train ours ...", "  batch 128: train ours ..."]


def test_every_batch_size_in_a_fresh_process_where_this_one_runs_in_another_allocator_mode(monkeypatch):
    """``--allocator system`` from a command started in hugetlb mode: no cell is timed in this process."""
    started, lines = [], []
    monkeypatch.setattr(against_pyg, "compare_with_reference", lambda *a, **k: pytest.fail("timed in this process"))

    def fresh(task, kwargs, **_):
        started.append(kwargs["batch_size"])
        return dict(_report(kwargs["batch_size"], 0.0),
                    progress=["parity on a batch of 16 graphs", f"  batch {kwargs['batch_size']}: train ours ..."])

    monkeypatch.setattr(worker, "run_isolated", fresh)
    out = compare_in_fresh_processes(Reference("/ref"), Subject.from_preset("mnist"), (16, 64), TIMING,
                                     progress=lines.append, first_here=False)
    assert started == [16, 64] and [row["batch_size"] for row in out["results"]] == [16, 64]
    assert sum("parity" in line for line in lines) == 1  # the first process's checks, once


def test_a_refusal_in_a_measuring_process_is_the_same_one_line_error(monkeypatch):
    monkeypatch.setattr(against_pyg, "compare_with_reference", lambda *a, **k: _report(16, 0.0))
    monkeypatch.setattr(worker, "run_isolated", lambda task, kwargs, **_: {
        "error": "the folded inference model differs from the model by 0.1 > 1e-05", "error_type": "ParityError",
        "progress": []})
    with pytest.raises(ParityError, match="folded inference model differs"):
        compare_in_fresh_processes(Reference("/ref"), Subject.from_preset("mnist"), (16, 64), TIMING)


def test_no_batch_sizes_is_refused():
    with pytest.raises(ValueError, match="no batch sizes"):
        compare_in_fresh_processes(Reference("/ref"), Subject.from_preset("mnist"), (), TIMING)


@pytest.mark.slow
@pytest.mark.reference
def test_a_measuring_process_compares_one_batch_size_against_the_real_reference():
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    lines = []
    out = compare_in_fresh_processes(Reference(REF_DIR), Subject.from_preset("mnist"), (2, 3), TIMING,
                                     progress=lines.append)
    assert [row["batch_size"] for row in out["results"]] == [2, 3]
    for row in out["results"]:
        assert row["ratio_train"] > 0 and row["ratio_infer"] > 0
    assert out["parity"]["checked_diff"] < 1e-5
    assert any(line.startswith("  batch 3: ") for line in lines)


def test_without_folding_the_merged_report_has_no_folding_difference(monkeypatch):
    monkeypatch.setattr(against_pyg, "compare_with_reference", lambda *a, **k: _report(16, None))
    monkeypatch.setattr(worker, "run_isolated", lambda task, kwargs, **_: dict(_report(64, None), progress=[]))
    out = compare_in_fresh_processes(Reference("/ref"), Subject.from_preset("mnist"), (16, 64), TIMING, fold=False)
    assert out["fold_max_abs_diff"] is None and [row["batch_size"] for row in out["results"]] == [16, 64]
