"""`geaet-dgl presets`: parameter counts against the paper's."""
import json

from click.testing import CliRunner

from geaet_dgl.data.nodes.node_sets import NODE_SETS

from geaet_dgl import cli


def test_presets_json_lists_six_presets_matching_the_paper():
    result = CliRunner().invoke(cli.main, ["presets", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    paper = [row for row in rows if row["paper_params"] is not None]
    assert [row["name"] for row in paper] == ["mnist", "cifar10", "pattern", "peptides-struct", "voc", "coco"]
    for row in rows:
        assert {"name", "dataset", "params", "paper_params"} <= set(row)
    for row in paper:
        assert row["params"] == row["paper_params"], row
    # Presets the paper gives no table column for are marked so (no paper count).
    assert {row["name"] for row in rows} - {row["name"] for row in paper} == {"cluster", "zinc", "tree",
                                                                              "peptides-func", "pcqm-contact", "geaet",
                                                                              "geaet-node", "ogbn-arxiv", "ogbn-products",
                                                                              "ogbg-molhiv", "ogbg-molpcba", "ogbg-ppa",
                                                                              "ogbg-code2", "pcqm4mv2", "malnet-tiny",
                                                                              "node-homophilous", "node-propagation", "node-heterophilous",
                                                                              "node-features", "node-ego-neighbours"} | set(NODE_SETS)
