"""A stand-in for the reference's ``main.py`` in tests: same command line, same result files.

It parses ``--cfg FILE --repeat 1 KEY VALUE ...`` as graphgym does and writes,
under ``out_dir/<cfg name>/<seed>/``, ``{train,val,test}/stats.json`` lines
shaped like the reference's logger's (values made up from the seed) and
``ckpt/<last epoch>.ckpt``; it appends its argv to ``calls.txt`` in its cwd.
"""
FAKE_MAIN = r'''
import json, os, sys
args = sys.argv[1:]
assert args[0] == "--cfg" and args[2:4] == ["--repeat", "1"], args
opts = dict(zip(args[4::2], args[5::2]))
with open("calls.txt", "a") as handle:
    handle.write(json.dumps(args) + "\n")
if opts.get("fail") == "yes":
    print("RuntimeError: something broke inside the reference")
    sys.exit(3)
seed, epochs = int(opts["seed"]), int(opts["optim.max_epoch"])
run_dir = os.path.join(opts["out_dir"], os.path.splitext(os.path.basename(args[1]))[0], str(seed))
for split in ("train", "val", "test"):
    os.makedirs(os.path.join(run_dir, split), exist_ok=True)
    with open(os.path.join(run_dir, split, "stats.json"), "w") as handle:
        for epoch in range(epochs):
            row = {"epoch": epoch, "time_epoch": 1.5 + epoch, "loss": 2.0 - 0.1 * epoch - 0.01 * seed,
                   "lr": 0.001, "params": 113155, "time_iter": 0.01, "accuracy": 0.5 + 0.1 * epoch + 0.01 * seed}
            if split == "train":
                row.update(eta=1.0, eta_hours=0.0)
            handle.write(json.dumps(row) + "\n")
os.makedirs(os.path.join(run_dir, "ckpt"), exist_ok=True)
open(os.path.join(run_dir, "ckpt", f"{epochs - 1}.ckpt"), "wb").close()
'''


def make_fake_reference(folder):
    """A folder with main.py and configs/GEAET/mnist.yaml, as a checkout of icm1018/GEAET has."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.py").write_text(FAKE_MAIN)
    (folder / "configs" / "GEAET").mkdir(parents=True, exist_ok=True)
    (folder / "configs" / "GEAET" / "mnist.yaml").write_text("out_dir: results\n")
    return folder
