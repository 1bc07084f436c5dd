"""checkpoint.copied: a copy of a training state that later steps leave alone."""
import torch

from geaet_dgl.training.checkpoint import copied


def test_a_copied_model_and_optimiser_state_is_equal_and_independent():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(5, 4)).sum().backward()
    optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "best": {"epoch": 1, "val": 0.5},
             "groups": [(1, 2.0), None]}
    snapshot = copied(state)
    frozen = {key: value.clone() for key, value in snapshot["model"].items()}
    first_moment = snapshot["optimizer"]["state"][0]["exp_avg"].clone()
    model(torch.randn(5, 4)).sum().backward()
    optimizer.step()  # the live state moves on; the snapshot must not
    for key, value in snapshot["model"].items():
        assert torch.equal(value, frozen[key])
        assert not torch.equal(value, model.state_dict()[key])
    assert torch.equal(snapshot["optimizer"]["state"][0]["exp_avg"], first_moment)
    assert snapshot["optimizer"]["param_groups"] == optimizer.state_dict()["param_groups"]
    assert snapshot["best"] == {"epoch": 1, "val": 0.5} and snapshot["groups"] == [(1, 2.0), None]
    restored = torch.optim.Adam(model.parameters(), lr=0.1)
    restored.load_state_dict(snapshot["optimizer"])  # a snapshot loads as a state_dict does
