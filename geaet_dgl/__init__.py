"""geaet-dgl: GEAET (Graph External Attention Enhanced Transformer) in DGL."""
import os
import sys

from .allocator import restart_console_script

__version__ = "0.1.0"

restart_console_script()  # the `geaet-dgl` command restarts in glibc's huge-page mode before torch is imported

os.environ.setdefault("DGLBACKEND", "pytorch")


def _import_dgl_without_ogb_update_check() -> None:
    """Import dgl (and, through ``dgl.data``, ogb) without ogb's PyPI version check.

    ogb's import starts a non-daemon thread that asks PyPI whether ogb is outdated; on a machine
    without network it can hold the process open at exit. ogb skips the check when
    ``from outdated import ...`` fails, so ``outdated`` is hidden for the duration of this one import.
    """
    hidden = "outdated" not in sys.modules
    if hidden:
        sys.modules["outdated"] = None  # type: ignore[assignment]
    try:
        import dgl.data  # noqa: F401
    finally:
        if hidden:
            sys.modules.pop("outdated", None)


_import_dgl_without_ogb_update_check()
