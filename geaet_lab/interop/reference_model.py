"""The PyG reference's network (icm1018/GEAET) built in this process, for parity checks and side-by-side timing.

Nothing of the reference is copied here: its modules are imported at run time
from a checkout the user names (``REF_DIR``), with torch_geometric, yacs,
torch-scatter, ogb, torchmetrics and performer-pytorch installed in the same
environment (see docs/performance.md, "Comparing with the PyG reference").
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import re
import sys
from typing import Dict, Optional, Tuple

import torch

from geaet_dgl.errors import GeaetError
from geaet_dgl.interop.reference_yaml import REFERENCE_PRESETS



class ReferenceUnavailable(GeaetError, RuntimeError):
    """The reference checkout or its dependencies cannot be imported."""


class ReferenceFailure(ReferenceUnavailable):
    """The reference's own code fails on a configuration it registers (a bug of the reference, not of the file)."""


#: known bugs of the reference: (exception type, text of its message) -> what fails, in words
KNOWN_REFERENCE_BUGS = (
    (AttributeError, "mlp_r_ij",
     "its GINEConvESLapPE (gt.layer_type GINE with posenc_EquivStableLapPE) calls reset_parameters() in its "
     "__init__ before it defines mlp_r_ij, so the layer cannot be built"),
)


def reference_failure(exc: BaseException, what: str) -> ReferenceFailure:
    """One line for an exception the reference's code raised while building ``what`` (e.g. "the model of
    zinc-GPS-ESLapPE.yaml"): a known bug named as such, any other one as a failure inside the reference."""
    raised = f"{type(exc).__name__}: {exc}"
    for kind, text, why in KNOWN_REFERENCE_BUGS:
        if isinstance(exc, kind) and text in str(exc):
            return ReferenceFailure(f"the reference cannot build {what}, a bug of the reference: {why} ({raised}); "
                                    "there is no reference model to compare ours with")
    return ReferenceFailure(f"the reference's own code failed building {what} ({raised}); run with --debug for "
                            "its traceback")


def import_reference_modules(ref_dir: str):
    """(graphgym's config module, its model builder) with the reference's modules registered."""
    sys.modules.setdefault("outdated", None)  # ogb's update check can hang the import
    if ref_dir not in sys.path:
        sys.path.insert(0, ref_dir)
    try:
        import importlib

        importlib.import_module("GEAET")  # registers the reference's modules
        return (importlib.import_module("torch_geometric.graphgym.config"),
                importlib.import_module("torch_geometric.graphgym.model_builder"))
    except ImportError as exc:
        raise ReferenceUnavailable(
            f"cannot import the reference from {ref_dir} ({exc}); install torch_geometric==2.5.3, yacs, ogb, "
            "torchmetrics, performer-pytorch and torch-scatter in this environment (docs/performance.md)"
        ) from exc


@contextlib.contextmanager
def _its_own_failures(what: str):
    """Exceptions raised inside (the reference's code, graphgym's and yacs's) as :class:`ReferenceFailure`;
    ours (:class:`~geaet_dgl.errors.GeaetError`) pass unchanged."""
    try:
        yield
    except GeaetError:
        raise
    except Exception as exc:  # noqa: BLE001 (the reference's code: any failure is reported as its own)
        raise reference_failure(exc, what) from exc


def _build_reference(ref_dir: str, load, dim_in: int, dim_out: int, seed: int, what: str = "its model"
                     ) -> torch.nn.Module:
    """graphgym's ``set_cfg``, ``load(cfg)`` (merges the configuration), ``assert_cfg``, then ``create_model``
    (an exception of the reference's code there: :class:`ReferenceFailure`, ``what`` saying what was built)."""
    graphgym_config, model_builder = import_reference_modules(ref_dir)
    cfg = graphgym_config.cfg
    graphgym_config.set_cfg(cfg)
    with _its_own_failures(what):  # its yacs configuration refuses a key it does not declare (KeyError)
        load(cfg)
        graphgym_config.assert_cfg(cfg)
    cfg.share.dim_in, cfg.share.dim_out = dim_in, dim_out
    _set_kernel_times(cfg)
    cfg.accelerator = cfg.device = "cpu"
    torch.manual_seed(seed)
    with _its_own_failures(what):
        return model_builder.create_model(to_device=False, dim_in=dim_in, dim_out=dim_out).model


def load_reference_model(ref_dir: str, preset: str, seed: int = 0, overrides: Optional[Dict[str, object]] = None,
                         dims: Optional[Tuple[int, int]] = None) -> torch.nn.Module:
    """Build the reference's GEAET network for ``preset`` from its own config file.

    ``overrides`` (``{'gt.layer_type': 'GCN+Performer+GEANet', ...}``) change
    config keys after the file is read; ``dims`` replaces ``(dim_in, dim_out)``.
    Returns the registered ``GEAET`` ``nn.Module`` (graphgym's ``model.model``),
    whose forward takes a PyG ``Batch`` and returns ``(pred, label)``.
    """
    if preset not in REFERENCE_PRESETS:
        raise ReferenceUnavailable(
            f"no reference mapping for preset {preset!r}; available: {', '.join(REFERENCE_PRESETS)}"
        )
    ref_dir = os.path.abspath(ref_dir)
    config_file, dim_in, dim_out = dataclasses.astuple(REFERENCE_PRESETS[preset])
    if dims is not None:
        dim_in, dim_out = dims
    if not os.path.isfile(os.path.join(ref_dir, config_file)):
        raise ReferenceUnavailable(f"{ref_dir} is not a checkout of icm1018/GEAET ({config_file} missing)")

    def load(cfg):
        cfg.merge_from_file(os.path.join(ref_dir, config_file))
        for key, value in (overrides or {}).items():
            cfg.merge_from_list([key, value])

    return _build_reference(ref_dir, load, dim_in, dim_out, seed, what=f"the model of {config_file}")


def as_reference_geaet(tree: dict) -> dict:
    """A GraphGPS YAML tree as the reference's GEAET network computes it: ``model.type: GPSModel`` becomes
    ``GEAET`` with ``gt.layer_type`` ``LOCAL+GLOBAL+None`` and GraphGPS's one ``gt.dropout`` as the reference's
    local, global and FFN dropouts (the reference registers GPSModel but cannot build it: it omits the
    external branch argument). Other trees are returned unchanged."""
    if tree.get("model", {}).get("type") != "GPSModel":
        return tree
    tree = copy.deepcopy(tree)
    tree["model"]["type"] = "GEAET"
    gt = tree.setdefault("gt", {})
    gt["layer_type"] = f"{gt.get('layer_type', 'SANLayer')}+None"
    dropout = gt.pop("dropout", 0.0)
    gt.update(local_dropout=dropout, global_dropout=dropout, ffn_dropout=dropout)
    return tree


def load_reference_from_config(ref_dir: str, config_file: str, dim_in: int, dim_out: int,
                               seed: int = 0, pna_degrees: Optional[list] = None) -> torch.nn.Module:
    """The reference's network for any GEAET or GraphGPS YAML (see :func:`as_reference_geaet`).

    ``pna_degrees``: the in-degree histogram its loader computes for a PNA layer type when the file gives
    none (:func:`~.reference_loader.reference_degree_histogram`), set as ``gt.pna_degrees``."""
    import yaml

    ref_dir = os.path.abspath(ref_dir)
    if not os.path.isdir(os.path.join(ref_dir, "GEAET")):
        raise ReferenceUnavailable(f"{ref_dir} is not a checkout of icm1018/GEAET (no GEAET package)")
    with open(config_file) as handle:
        tree = as_reference_geaet(yaml.safe_load(handle))

    def load(cfg):
        from yacs.config import CfgNode

        cfg.merge_from_other_cfg(CfgNode(tree))
        if pna_degrees is not None:
            cfg.gt.pna_degrees = list(pna_degrees)

    return _build_reference(ref_dir, load, dim_in, dim_out, seed,
                            what=f"the model of {os.path.basename(config_file)}")


def _set_kernel_times(cfg) -> None:
    """Fill ``posenc_*.kernel.times`` from ``times_func`` (e.g. ``range(1,17)``), as GraphGPS's main does
    before building the model; without it the RWSE encoder is built for zero steps."""
    for name in ("posenc_RWSE", "posenc_HKdiagSE", "posenc_ElstaticSE"):
        posenc = getattr(cfg, name, None)
        if posenc is None or not posenc.enable:
            continue
        match = re.fullmatch(r"\s*range\(\s*(?:(-?\d+)\s*,\s*)?(-?\d+)\s*\)\s*", str(posenc.kernel.times_func))
        if match is None:
            raise ReferenceUnavailable(f"cannot read {name}.kernel.times_func={posenc.kernel.times_func!r}; "
                                       "expected range(a,b)")
        posenc.kernel.times = list(range(int(match.group(1) or 0), int(match.group(2))))


def zero_dropout(model: torch.nn.Module) -> None:
    """Set every dropout probability in ``model`` to 0 (ours and the reference's)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if isinstance(module, torch.nn.MultiheadAttention):
            module.dropout = 0.0
        for attr in ("dropout", "attn_dropout"):
            if isinstance(getattr(module, attr, None), float):
                setattr(module, attr, 0.0)
