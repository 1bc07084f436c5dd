"""`predict` sees graphs as training saw them (the loader's standardisation is recorded and applied)."""
import json

import dgl
import pytest
import torch

from geaet_dgl.data.lrgb.voc_coco import load_lrgb_superpixels
from geaet_dgl.training import make_run_config
from geaet_dgl.data.options import LoadOptions
from geaet_dgl.training import train
from geaet_dgl.scoring import open_trained_run
from geaet_dgl.scoring.predict import model_outputs, predict_file, prepare_graphs
from tests.data.lrgb.test_data_lrgb_superpixels import write_superpixel_fixture

TINY = {"model.hidden_dim": 16, "model.num_layers": 1, "model.geanet.unit_size": 4, "train.epochs": 1,
        "train.batch_size": 4, "train.warmup_epochs": 0}


@pytest.fixture(scope="module")
def voc_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("voc")
    write_superpixel_fixture("voc", root / "data")
    train(make_run_config("voc", overrides=TINY, data={"data_dir": str(root / "data")}), root / "run", progress=False)
    return root


def test_the_run_records_the_standardisation(voc_run):
    data = json.loads((voc_run / "run" / "config.json").read_text())["data"]
    transform = data["input_transform"]["standardize"]
    assert len(transform["node_mean"]) == 14 and len(transform["edge_std"]) == 2


@pytest.mark.slow
def test_predict_on_raw_superpixel_graphs_equals_the_model_on_the_loaders_graphs(voc_run, tmp_path):
    raw = load_lrgb_superpixels("voc", LoadOptions(data_dir=voc_run / "data", standardize=False, progress=False)).test
    seen = load_lrgb_superpixels("voc", LoadOptions(data_dir=voc_run / "data",
                                                    progress=False)).test  # as training and eval see them
    path = tmp_path / "raw.bin"
    dgl.save_graphs(str(path), raw.graphs)
    run, model, _ = open_trained_run(voc_run / "run" / "best.pt")
    graphs, _ = dgl.load_graphs(str(path))
    prepare_graphs(graphs, path, run)
    expected = model_outputs(model, seen.graphs, run.train.batch_size)
    got = model_outputs(model, graphs, run.train.batch_size)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    summary = predict_file(voc_run / "run" / "best.pt", path, tmp_path / "p.csv", progress=False)
    assert summary["rows"] == sum(g.num_nodes() for g in raw.graphs)
