"""benchmarks/lappe_solvers.py: every solver on the same graph, in its own process, eigenvalues compared."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "lappe_solvers.py"


@pytest.mark.slow
def test_solvers_agree_and_the_rows_say_which_route_ran(tmp_path):
    out = tmp_path / "solvers.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--graph", "knn", "--sizes", "600", "900", "--solvers",
                           "arpack", "lobpcg", "--k", "4", "--json", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    saved = json.loads(out.read_text())
    rows = saved["rows"]
    assert [(r["nodes"], r["solver"]) for r in rows] == [(600, "arpack"), (600, "lobpcg"), (900, "arpack"),
                                                         (900, "lobpcg")]
    assert [r["route"] for r in rows] == ["ARPACK", "LOBPCG + multigrid"] * 2
    for row in rows:
        assert len(row["eigenvalues"]) == 4 and row["eigenvalues"][0] == 0.0  # a connected kNN graph: one zero
        assert row["residual"] < 1e-4 and row["cpu_s"] > 0 and row["peak_rss_mib"] > 0
    assert rows[1]["max_eigenvalue_diff"] < 1e-6 and rows[3]["max_eigenvalue_diff"] < 1e-6  # LOBPCG = Lanczos
    assert set(saved["exponents"]) == {"knn/arpack", "knn/lobpcg"}
