"""The benchmarked model resolved once (:mod:`geaet_lab.benchmarking.subject`): a preset's or a reference YAML's,
read once per run, the same settings as the preset table and the file reader give."""
import dataclasses
from pathlib import Path

import pytest

from geaet_dgl.config.presets import get_preset
from geaet_dgl.errors import GeaetError
from geaet_lab.benchmarking import run_benchmark
from geaet_lab.benchmarking import config_subject as config_module
from geaet_lab.benchmarking.config_subject import config_subject
from geaet_lab.benchmarking.inputs import check_supported
from geaet_lab.benchmarking.jobs import ModelJob, Timing
from geaet_lab.benchmarking.subject import Subject, as_subject, resolve_subject

CONFIGS = Path(__file__).resolve().parents[2] / "benchmarks" / "configs"
TINY = Timing(repeats=1, warmup=0, num_batches=1, threads=1, isolate=False)


def test_a_preset_resolves_to_its_table_entry_under_its_checked_name():
    subject = Subject.from_preset("MNIST")
    assert (subject.name, subject.preset, subject.dataset, subject.config_file) == ("mnist", "mnist", "mnist", None)
    assert subject.model == get_preset("mnist").model and subject.train == get_preset("mnist").train
    assert as_subject(subject) is subject
    with pytest.raises(dataclasses.FrozenInstanceError):
        subject.name = "cifar10"


@pytest.mark.parametrize("name", ["no-such-preset", "Zinc-Node"])
def test_a_bad_preset_gets_the_same_error_as_the_check(name):
    with pytest.raises(GeaetError) as expected:
        check_supported(name)
    with pytest.raises(type(expected.value)) as got:
        Subject.from_preset(name)
    assert str(got.value) == str(expected.value)


def test_a_file_resolves_to_what_its_reader_gives_and_hands_out_fresh_copies():
    path = CONFIGS / "mnist-GPS-GAT.yaml"
    subject = Subject.from_config_file(path)
    read = config_subject(path)
    assert (subject.name, subject.dataset, subject.config_file, subject.preset) == \
        ("mnist-GPS-GAT.yaml", read.dataset, str(path), None)
    assert subject.model == read.model and subject.train == read.train
    first = subject.file_subject()
    first.reference_cfg = object()  # what building the reference's model records
    assert subject.file_subject().reference_cfg is None and subject.file_subject() is not first
    # what crosses into a measuring process rebuilds the same subject
    assert resolve_subject(**subject.worker_kwargs()) == subject
    assert resolve_subject(**Subject.from_preset("cifar10").worker_kwargs()) == Subject.from_preset("cifar10")
    with pytest.raises(ValueError, match="is a preset"):
        Subject.from_preset("mnist").file_subject()


def test_a_run_reads_its_yaml_once(monkeypatch):
    reads = []
    real = config_module.read_reference_config
    monkeypatch.setattr(config_module, "read_reference_config", lambda path: reads.append(path) or real(path))
    path = str(CONFIGS / "mnist-GPS-GAT.yaml")
    report = run_benchmark(ModelJob(batch_sizes=(2,), config_file=path, throughput=False, breakdown=True, timing=TINY),
                           echo=None)
    assert reads == [path]  # the job's checks and the breakdown share one reading
    assert report["config"]["preset"] == "mnist-GPS-GAT.yaml" and len(report["breakdown"]) == 1


def test_an_unknown_preset_is_refused_before_anything_runs(monkeypatch):
    monkeypatch.setattr("geaet_lab.benchmarking.api.run_throughput", lambda *a, **k: pytest.fail("measured"))
    with pytest.raises(GeaetError, match="unknown preset 'nosuch'"):
        run_benchmark(ModelJob(preset="nosuch", batch_sizes=(2,), timing=TINY), echo=None)
