"""Tiny synthetic studies: a 1-layer width-8 GEAET (with a Transformer branch) on a few graphs."""
TINY_SETTINGS = ["model.hidden_dim=8", "model.num_layers=1", "train.batch_size=8", "train.warmup_epochs=0"]
TINY_LIMITS = ["--limit-train", "16", "--limit-val", "8", "--limit-test", "8"]


def tiny_args(*settings: str, unit_size: bool = True) -> list:
    """``--set`` options and data limits of a tiny synthetic run (plus ``settings``)."""
    args = []
    for item in TINY_SETTINGS + (["model.geanet.unit_size=2"] if unit_size else []) + list(settings):
        args += ["--set", item]
    return args + TINY_LIMITS + ["--no-progress"]
