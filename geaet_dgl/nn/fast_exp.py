"""``exp`` in place by the faster of PyTorch's two CPU kernels for it on this machine.

PyTorch computes a contiguous float32 ``exp`` on CPU with MKL's VML (``vsExp``, linked into libtorch), ``exp2``
with SLEEF's vector code. On Intel CPUs VML is the faster of the two; on AMD CPUs MKL takes its generic
path. Measured (640k float32 values in [-60, 0], one thread, best of 7 rounds, microseconds; the AMD machine
shared and loaded, hence the ranges over four runs):

=====================================================  ============  =========  ========================
CPU, torch (MKL)                                       ``exp``       ``exp2``   ``x * log2 e``, ``exp2``
=====================================================  ============  =========  ========================
AMD EPYC (family 25, AVX-512), torch 2.2.1 (MKL 2022)  554-1,765     215-427    887 (one run)
Intel Xeon (AVX-512), torch 2.11 (MKL 2024)            273           340        565
=====================================================  ============  =========  ========================

So on a CPU that is not Intel's, :func:`exp_` takes ``exp(x) = exp2(x log2 e)``; callers that can fold
the factor into an earlier product (a projection, a shift) multiply by :func:`logit_scale` there and call
:func:`exp_scaled_`, which is then one pass. The results agree with ``exp`` to float32 rounding (the product
``x log2 e`` is rounded once: relative error below ``|x| 2^-24``, 4e-6 at ``x = -60``).
``$GEAET_DGL_EXP=exp`` or ``exp2`` overrides the choice; tensors off the CPU always take ``exp``.
"""
from __future__ import annotations

import os

import torch

#: log2(e): ``exp(x) = exp2(x * LOG2E)``.
LOG2E = 1.4426950408889634
#: ``$GEAET_DGL_EXP``: ``exp`` or ``exp2`` forces that kernel on CPU tensors.
ENV_VAR = "GEAET_DGL_EXP"


def _cpu_vendor() -> str:
    """``vendor_id`` of /proc/cpuinfo (``GenuineIntel``, ``AuthenticAMD``), or '' where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _choose_exp2() -> bool:
    forced = os.environ.get(ENV_VAR, "").strip().lower()
    if forced in ("exp", "exp2"):
        return forced == "exp2"
    vendor = _cpu_vendor()
    return bool(vendor) and vendor != "GenuineIntel"


#: Whether CPU tensors take ``exp2`` (module docstring); tests may set it.
USE_EXP2 = _choose_exp2()


def uses_exp2(x: torch.Tensor) -> bool:
    """Whether :func:`exp_` and :func:`exp_scaled_` take ``exp2`` for ``x``."""
    return USE_EXP2 and x.device.type == "cpu"


def logit_scale(x: torch.Tensor) -> float:
    """The factor :func:`exp_scaled_` expects its input to carry: ``log2 e`` where it takes ``exp2``, else 1."""
    return LOG2E if uses_exp2(x) else 1.0


def exp_scaled_(x: torch.Tensor) -> torch.Tensor:
    """``x`` holds ``logit_scale(x) * a``; writes ``exp(a)`` into ``x`` and returns it (one pass)."""
    return x.exp2_() if uses_exp2(x) else x.exp_()


def exp_(x: torch.Tensor) -> torch.Tensor:
    """``exp`` in place, returns ``x`` (two passes where it takes ``exp2``: the product, then ``exp2``)."""
    return x.mul_(LOG2E).exp2_() if uses_exp2(x) else x.exp_()
