"""The name table both ways for the new encoders: every tensor of ours has a reference name and comes back."""
import dataclasses

import pytest
import torch

from geaet_dgl.config import GraphormerConfig, ModelConfig, SignNetConfig
from geaet_dgl.interop.reference_names import ours_to_reference, reference_to_ours
from geaet_dgl.models import build_model

CASES = {
    "signnet-alone": dict(pe="signnet", pe_k=4, pe_dim=8, signnet=SignNetConfig(phi_hidden_dim=8, rho_layers=2)),
    "signnet-typedict": dict(pe="signnet", pe_k=4, pe_dim=8, signnet=SignNetConfig(rho_layers=2),
                             node_encoder="typedict", node_vocab_sizes=[5],
                             node_in_feats=1),
    "hkdiagse-mlp": dict(pe="hkdiagse", pe_k=6, pe_dim=8, pe_model="mlp", pe_layers=2, pe_raw_norm=True),
    "elstaticse": dict(pe="elstaticse", pe_k=10, pe_dim=8),
    "graphormer-rwse": dict(pe="rwse", pe_k=6, pe_dim=8, attention="biased_transformer", mpnn="gine",
                            graphormer=GraphormerConfig(enable=True)),
    "graphormer-paths": dict(pe="none", attention="biased_transformer", mpnn="gine",
                             graphormer=GraphormerConfig(enable=True, num_edge_types=4)),
    "graphormer-degrees": dict(pe="none", graphormer=GraphormerConfig(enable=True, degrees_only=True)),
    "san-head": dict(pe="none", head="san_graph", head_layers=3),
    # GraphGPS's TypeDictNode+LapPE+RWSE (zinc-GPS-LapPE+RWSE.yaml): the SE is the third encoder of the chain
    "lappe-rwse": dict(pe="lappe", se="rwse", pe_k=4, pe_dim=8, se_k=6, se_dim=4, se_raw_norm=True, node_encoder="typedict",
                       node_vocab_sizes=[5], node_in_feats=1),
    # zinc-GPSwGraphormer+VN.yaml: the token's bias row in the bias encoder, its node in the degree encoder
    "graphormer-token": dict(pe="none", attention="biased_transformer", mpnn="gine", pooling="first",
                             graphormer=GraphormerConfig(enable=True, num_edge_types=4, graph_token=True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_and_reference_names(case):
    config = dataclasses.replace(ModelConfig(hidden_dim=32, num_layers=2, external=False), **CASES[case])
    state = build_model(config.validate()).state_dict()
    theirs = ours_to_reference(state, config)
    back = reference_to_ours(theirs)
    assert set(back) == set(state) and all(torch.equal(back[k], state[k]) for k in state)
    names = set(theirs)
    if config.pe == "signnet":
        prefix = "encoder.node_encoder.sign_inv_net." if case == "signnet-alone" else \
            "encoder.node_encoder.encoder2.sign_inv_net."
        assert prefix + "enc.layers.0.nn.lins.0.weight" in names and prefix + "rho.bns.0.running_mean" in names
    if config.graphormer.enable and not config.graphormer.degrees_only and config.pe != "none":
        assert {"encoder.node_encoder.encoder2.0.spatial_encoder.weight",
                "encoder.node_encoder.encoder2.1.in_degree_encoder.weight",
                "encoder.node_encoder.encoder3.pe_encoder.weight", "layers.0.local_model.eps"} <= names
    if case == "graphormer-paths":
        assert {"encoder.node_encoder.encoder2.0.edge_encoder.weight",
                "encoder.node_encoder.encoder2.0.edge_dis_encoder.weight"} <= names
    if case == "graphormer-degrees":
        assert "encoder.node_encoder.encoder2.0.out_degree_encoder.weight" in names
    if case == "san-head":
        assert "post_mp.FC_layers.2.weight" in names
    if case == "lappe-rwse":
        assert {"encoder.node_encoder.encoder2.linear_A.weight", "encoder.node_encoder.encoder3.raw_norm.weight",
                "encoder.node_encoder.encoder3.pe_encoder.weight"} <= names
        assert not any(k.startswith("se_encoder.") for k in names)
    if case == "graphormer-token":
        assert theirs["encoder.node_encoder.encoder2.0.graph_token"].shape == (1, config.num_heads, 1)
        assert theirs["encoder.node_encoder.encoder2.1.graph_token"].shape == (1, config.hidden_dim)
