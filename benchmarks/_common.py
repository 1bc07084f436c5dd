"""Shared bits of the benchmark scripts: make the repository importable without installing it."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
os.environ.setdefault("DGLBACKEND", "pytorch")


def add_common(parser):
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads in every process (default: $OMP_NUM_THREADS, else the cores this process "
                             "may use; see geaet_dgl/threads.py)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--json", dest="json_path", default=None, help="write the JSON report here")
    parser.add_argument("--plot", dest="plot_path", default=None, help="write the PNG plot here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allocator", choices=["hugetlb", "system", "keep"], default=None,
                        help="glibc mode of the measuring processes (default $GEAET_DGL_ALLOCATOR, else hugetlb; "
                             "see geaet_dgl/allocator.py)")
    return parser
