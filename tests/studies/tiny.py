"""Tiny synthetic studies: a 1-layer width-8 GEAET (with a Transformer branch) on a few graphs."""
TINY_SETTINGS = ["model.hidden_dim=8", "model.num_layers=1", "train.batch_size=8", "train.warmup_epochs=0"]
TINY_LIMITS = ["--limit-train", "16", "--limit-val", "8", "--limit-test", "8"]


def tiny_args(*settings: str, unit_size: bool = True) -> list:
    """``--set`` options and data limits of a tiny synthetic run (plus ``settings``)."""
    args = []
    for item in TINY_SETTINGS + (["model.geanet.unit_size=2"] if unit_size else []) + list(settings):
        args += ["--set", item]
    return args + TINY_LIMITS + ["--no-progress"]


def interrupt_seed_study(monkeypatch, run, seeds, out) -> None:
    """Run the seed study ``run_seeds(run, seeds, out)`` with seed 1 stopped (TrainingInterrupted) after its
    first epoch, as Ctrl-C would stop it; the trainer is restored afterwards."""
    import pytest

    from geaet_dgl.training.seeds import run_seeds
    from geaet_dgl.training import TrainingInterrupted
    from geaet_dgl.training.trainer import Trainer

    original = Trainer._run_epoch

    def stop_seed1_after_epoch1(self):
        original(self)
        if self.run.train.seed == 1 and self.epoch == 1:
            raise TrainingInterrupted("stopped for the test", 15)

    monkeypatch.setattr(Trainer, "_run_epoch", stop_seed1_after_epoch1)
    with pytest.raises(TrainingInterrupted):
        run_seeds(run, seeds, out, progress=False)
    monkeypatch.setattr(Trainer, "_run_epoch", original)
