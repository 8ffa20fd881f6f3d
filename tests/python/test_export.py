"""The in-memory PT2 archive the backend hands the core."""

from __future__ import annotations

import io

import torch

from luminal.export import serialize, without_canonical_form_check


class Cached(torch.nn.Module):
    """A Linear and an in-place cache update: parameters, a mutated buffer and a user output."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.register_buffer("cache", torch.zeros(4, 8))

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.silu(self.proj(x))
        self.cache.index_copy_(0, position, y)
        return self.cache.sum(0).softmax(-1)


def exported_program() -> torch.export.ExportedProgram:
    ep = torch.export.export(Cached(), (torch.randn(1, 8), torch.tensor([2])), strict=False)
    return ep.run_decompositions()


def plain_save(ep: torch.export.ExportedProgram) -> bytes:
    buffer = io.BytesIO()
    torch.export.save(ep, buffer)
    return buffer.getvalue()


def test_skipping_the_canonical_form_check_leaves_the_archive_unchanged():
    """serialize() skips torch's canonical-form self-check for speed; the bytes must be those
    torch.export.save writes with the check."""
    ep = exported_program()
    assert plain_save(ep) == plain_save(ep)  # the archive is deterministic, so bytes can be compared
    with without_canonical_form_check():
        skipped = plain_save(ep)
    assert skipped == plain_save(ep)
    assert serialize(ep, set()) == plain_save(ep)


def test_the_check_is_restored_after_a_failed_save():
    from torch._export.serde import serialize as serde

    original = serde.canonicalize
    try:
        with without_canonical_form_check():
            raise RuntimeError("save failed")
    except RuntimeError:
        pass
    assert serde.canonicalize is original
