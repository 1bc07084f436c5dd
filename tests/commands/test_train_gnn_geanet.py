"""The paper's "GNN + GEANet" models (Tables 2 and 3) are configurations: any MPNN, no Transformer."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from tests.data.fixtures_dgl import write_zinc_fixture
from tests.commands.test_train_datasets import TINY


@pytest.mark.parametrize("mpnn", ["gcn", "gin", "gine", "gatedgcn"])
@pytest.mark.slow
def test_mpnn_plus_geanet_trains_and_geanet_adds_its_units(tmp_path, mpnn):
    write_zinc_fixture(tmp_path / "data")
    params = {}
    for external in ("true", "false"):
        out = tmp_path / f"run-{external}"
        args = ["train", "--dataset", "zinc", "--data-dir", str(tmp_path / "data"), "--out", str(out),
                "--set", f"model.mpnn={mpnn}", "--set", "model.attention=none", "--set", f"model.external={external}",
                "--set", "model.pe_k=4", "--set", "model.pe_dim=4"] + TINY
        result = CliRunner().invoke(cli.main, args)
        assert result.exit_code == 0, result.output
        config = json.loads((out / "config.json").read_text())["model"]
        assert (config["mpnn"], config["attention"], config["external"]) == (mpnn, "none", external == "true")
        params[external] = json.loads((out / "summary.json").read_text())["params"]
    # What GEANet adds to the one tiny layer, counted by hand: node_U1 and node_U2, two (S, S) linears
    # with bias at S = unit_size = 4 (the zinc preset has no edge or shared unit): 2 * (16 + 4) = 40;
    # and the external branch's BatchNorm at width 16: 2 * 16 = 32.
    assert params["true"] - params["false"] == 2 * (4 * 4 + 4) + 2 * 16
