"""Helpers for the CUDA code generator's tests: these need NVRTC, never a GPU. (Not a
conftest.py: tests/conftest.py owns that module name for the whole suite.)

`check_model` compiles a model with torch.compile through a backend that exports the graph as
luminal's does, plans its kernels as the CUDA runtime would, and compiles every distinct kernel
with NVRTC (luminal._C.cuda_check_pt2); the model itself runs eagerly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from luminal import _C
from luminal.errors import UserError
from luminal.export import export_graph, own_copy, quiet_torch_internals

# The model families live beside the model suite; re-exported for the tests here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))
from families import DECODERS, MAX_CACHE_LEN, MOE, bert, build  # noqa: E402

__all__ = [
    "ARCHS",
    "DECODERS",
    "MAX_CACHE_LEN",
    "MOE",
    "bert",
    "build",
    "check_model",
    "failures",
    "needs_nvrtc",
]

ARCHS = ["sm_80", "sm_90"]


def _nvrtc_skip_reason() -> str | None:
    if not getattr(_C, "has_cuda", False):
        return (
            "luminal was built without the CUDA code generator "
            "(LUMINAL_CUDA=OFF, the default where no CUDA toolkit headers are found)"
        )
    try:
        _C.cuda_nvrtc_version()
    except UserError as error:
        return f"NVRTC is not installed (pip install nvidia-cuda-nvrtc): {error}"
    return None


NVRTC_SKIP_REASON = _nvrtc_skip_reason()


# Every test module here starts with `pytestmark = needs_nvrtc`.
needs_nvrtc = pytest.mark.skipif(NVRTC_SKIP_REASON is not None, reason=NVRTC_SKIP_REASON or "")


def check_backend(reports: list[dict], archs: list[str] = ARCHS, image: str = "cubin"):
    """A torch.compile backend that runs the graph eagerly and, on its first call, exports it as
    luminal's backend does (with the call's real arguments, as luminal's does: exporting while
    dynamo traces breaks its guards under dynamic shapes) and appends its cuda_check_pt2 report."""

    def backend(gm, example_inputs, **_):
        graph = own_copy(gm)

        def run(*args):
            if not reports:
                with quiet_torch_internals():
                    exported = export_graph(graph, list(args))
                reports.append(_C.cuda_check_pt2(exported.archive, set(exported.weights), archs, image))
            return gm(*args)

        return run

    return backend


def check_model(
    model: torch.nn.Module,
    kwargs: dict,
    archs: list[str] = ARCHS,
    dynamic: bool = False,
    image: str = "cubin",
) -> dict:
    """The cuda_check_pt2 report of the one graph torch.compile makes of `model(**kwargs)`."""
    reports: list[dict] = []
    torch._dynamo.reset()
    backend = check_backend(reports, archs, image)
    compiled = torch.compile(model, backend=backend, fullgraph=True, dynamic=None if dynamic else False)
    with torch.no_grad():
        compiled(**kwargs)
    assert len(reports) == 1, f"expected one graph, got {len(reports)}"
    return reports[0]


def failures(report: dict) -> list[str]:
    """One line per kernel and arch that NVRTC rejected or warned about, with its log."""
    lines = []
    for kernel in report["kernels"]:
        for arch, image in kernel["images"].items():
            if not image["ok"] or image["warnings"] or image["bytes"] == 0:
                header = f"{kernel['name']} ({kernel['what']}) on {arch}"
                lines.append(f"{header}:\n{image['log']}\n{kernel['source']}")
    return lines
