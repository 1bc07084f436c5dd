"""GraphGPS's own 57 configs (configs/GPS/): each builds our model without the external branch, or is refused
in one line naming the key (a dataset we do not load, an option geaet-dgl does not have)."""
from pathlib import Path

import pytest
import yaml

from geaet_dgl.config import ConfigError
from geaet_dgl.interop.reference_yaml import config_from_values, flatten
from geaet_dgl.models import build_model

CONFIGS = yaml.safe_load((Path(__file__).parent / "graphgps_configs.yaml").read_text())

# file -> (dataset, mpnn, attention, pe, hidden_dim, num_layers, head) it builds
BUILDS = {
    "cifar10-GPS+RWSE.yaml": ("cifar10", "gatedgcn", "transformer", "rwse", 52, 3, "graph"),
    "cifar10-GPS+SNDS.yaml": ("cifar10", "gatedgcn", "transformer", "signnet", 52, 3, "graph"),
    "cifar10-GPS+SNMLP.yaml": ("cifar10", "gatedgcn", "transformer", "signnet", 52, 3, "graph"),
    "cifar10-GPS-ESLapPE.yaml": ("cifar10", "gatedgcn", "transformer", "eslappe", 52, 3, "graph"),
    "cifar10-GPS.yaml": ("cifar10", "gatedgcn", "transformer", "lappe", 52, 3, "graph"),
    "cluster-GPS-ESLapPE.yaml": ("cluster", "gatedgcn", "transformer", "eslappe", 48, 16, "node"),
    "cluster-GPS.yaml": ("cluster", "gatedgcn", "transformer", "lappe", 48, 16, "node"),
    "mnist-GPS-ESLapPE.yaml": ("mnist", "gatedgcn", "transformer", "eslappe", 52, 3, "graph"),
    "mnist-GPS.yaml": ("mnist", "gatedgcn", "transformer", "lappe", 52, 3, "graph"),
    "pattern-GPS-ESLapPE.yaml": ("pattern", "gatedgcn", "transformer", "eslappe", 64, 6, "node"),
    "pattern-GPS.yaml": ("pattern", "gatedgcn", "transformer", "lappe", 64, 6, "node"),
    "peptides-func-GPS.yaml": ("peptides-func", "gatedgcn", "transformer", "lappe", 96, 4, "graph"),
    "peptides-struct-GPS.yaml": ("peptides-struct", "gatedgcn", "transformer", "lappe", 96, 4, "graph"),
    "vocsuperpixels-GPS.yaml": ("voc", "gatedgcn", "transformer", "lappe", 96, 4, "node"),
    "zinc-GPS+RWSE-ckptbest.yaml": ("zinc", "gine", "transformer", "rwse", 64, 10, "san_graph"),
    "zinc-GPS+RWSE.yaml": ("zinc", "gine", "transformer", "rwse", 64, 10, "san_graph"),
    "zinc-GPS+SNDS.yaml": ("zinc", "gine", "transformer", "signnet", 64, 10, "san_graph"),
    "zinc-GPS+SNMLP.yaml": ("zinc", "gine", "transformer", "signnet", 64, 10, "san_graph"),
    "zinc-GPS-ESLapPE.yaml": ("zinc", "gine", "transformer", "eslappe", 64, 10, "san_graph"),
    "zinc-GPS.yaml": ("zinc", "gine", "transformer", "lappe", 64, 10, "san_graph"),
    "zinc-GPSwGraphormer.yaml": ("zinc", "gine", "biased_transformer", "rwse", 64, 10, "san_graph"),
}

BUILT_BEFORE = set(BUILDS)
# the rest of the 57: datasets whose loaders read these widths from their schema rows
BUILDS.update({
    "actor-GPS.yaml": ("actor", "gcn", "transformer", "lappe", 64, 2, "node"),
    "webkb-cor-GPS.yaml": ("cornell", "gcn", "transformer", "lappe", 64, 2, "node"),
    "webkb-tex-GPS.yaml": ("texas", "gcn", "transformer", "lappe", 64, 2, "node"),
    "webkb-wis-GPS.yaml": ("wisconsin", "gcn", "transformer", "lappe", 64, 2, "node"),
    "wn-chameleon-GPS.yaml": ("chameleon", "gcn", "transformer", "lappe", 64, 2, "node"),
    "wn-squirrel-GPS.yaml": ("squirrel", "gcn", "transformer", "lappe", 64, 2, "node"),
    "cocosuperpixels-GPS.yaml": ("coco", "gatedgcn", "transformer", "lappe", 96, 4, "node"),
    "ogbg-code2-GPS.yaml": ("ogbg-code2", "gatedgcn", "performer", "none", 256, 4, "sequence"),
    "ogbg-ppa-GPS.yaml": ("ogbg-ppa", "gatedgcn", "performer", "none", 256, 3, "graph"),
    "pcqm-contact-GPS.yaml": ("pcqm-contact", "gatedgcn", "transformer", "lappe", 96, 4, "link"),
    "zinc-GPS-LapPE+RWSE.yaml": ("zinc", "gine", "transformer", "lappe", 64, 10, "san_graph"),
    "zinc-GPSwGraphormer+VN.yaml": ("zinc", "gine", "biased_transformer", "none", 64, 10, "san_graph"),
})
for _name, _tree in CONFIGS.items():
    if _name.startswith(("malnettiny", "ogbg-mol", "pcqm4m")) and "inference" not in _name:
        BUILDS.setdefault(_name, None)  # checked against the file itself below

# file -> the text its one-line refusal names: only the two that evaluate a pretrained folder not shipped here
REFUSED = {
    "zinc-GPS+RWSE-inference.yaml": "pretrained.dir='pretrained/zinc-GPS+RWSE-ckptbest' is not a reference run folder",
    "pcqm4m-GPSdeep-inference.yaml": "pretrained.dir='pretrained/pcqm4m-GPS+RWSE.deep' is not a reference run",
}


def test_every_config_is_accounted_for():
    assert len(CONFIGS) == 57
    assert set(BUILDS) | set(REFUSED) == set(CONFIGS) and not set(BUILDS) & set(REFUSED)


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_config_builds_graphgps_model(name):
    ref = config_from_values(flatten(CONFIGS[name]), where=name)
    model = ref.preset.model
    tree = CONFIGS[name]
    if BUILDS[name] is not None:
        dataset, mpnn, attention, pe, width, depth, head = BUILDS[name]
        assert (ref.preset.dataset, model.mpnn, model.attention, model.pe) == (dataset, mpnn, attention, pe)
        assert model.head == head
        assert (width, depth) == (tree["gt"]["dim_hidden"], tree["gt"]["layers"]) or name not in BUILT_BEFORE
    local = tree["gt"]["layer_type"].split("+")[0]
    assert model.mpnn == {"CustomGatedGCN": "gatedgcn", "GINE": "gine", "GCN": "gcn"}[local]
    assert (model.hidden_dim, model.num_layers, model.external) == (tree["gt"]["dim_hidden"], tree["gt"]["layers"],
                                                                    False)
    dropout = float(CONFIGS[name]["gt"].get("dropout", 0.0))
    assert model.local_dropout == model.global_dropout == model.ffn_dropout == dropout  # GPSLayer's one dropout
    assert model.use_ffn and not model.local_out_act
    net = build_model(model)
    assert not any("external" in key for key in net.state_dict())
    if model.attention == "biased_transformer" and name != "zinc-GPSwGraphormer+VN.yaml":
        graphormer = model.graphormer
        assert (graphormer.enable, graphormer.degrees_only, graphormer.spatial_types, graphormer.num_edge_types,
                graphormer.num_in_degrees) == (True, False, 20, 4, 64)
        assert net.bias_encoder.edge_dis_encoder.weight.shape == (20 * 4 * 4, 1)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_config_refused_in_one_line(name):
    with pytest.raises(ConfigError) as err:
        config_from_values(flatten(CONFIGS[name]), where=name)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{name}: ")
    assert REFUSED[name] in message


def test_pre_mp_layer_is_normalised_as_graphgyms_default_and_refuses_l2norm_off():
    """graphgym's GNNPreMP ends in an L2 normalisation of each node (gnn.l2norm, default True); off is refused."""
    name = "malnettiny-GPS-noPE.yaml"
    assert "l2norm" not in CONFIGS[name]["gnn"]
    assert config_from_values(flatten(CONFIGS[name]), where=name).preset.model.node_encoder == "premp"
    tree = dict(CONFIGS[name], gnn=dict(CONFIGS[name]["gnn"], l2norm=False))
    with pytest.raises(ConfigError, match=r"gnn\.l2norm.*unit L2 norm.*set it to True"):
        config_from_values(flatten(tree), where=name)
