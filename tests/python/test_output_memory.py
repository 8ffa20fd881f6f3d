"""Where a compiled call's CPU outputs live: a large one (32 MiB and up) in the mapping of the
last large one freed, where it fits (csrc/bindings/large_output_allocator.h)."""

from __future__ import annotations

import gc

import pytest
import torch

import luminal
from conftest import CountingBackend


def doubled(x):
    return x * 2


def mib_input(mib: int) -> torch.Tensor:
    """An f32 input (and so output) of `mib` MiB."""
    return torch.randn(mib, 1 << 18)


def drop(tensor_holder: list) -> None:
    tensor_holder.clear()
    gc.collect()


@pytest.fixture
def compiled():
    torch.manual_seed(0)
    return torch.compile(doubled, backend=CountingBackend(), dynamic=False)


def test_the_last_freed_output_is_the_next_calls_and_only_it_is_kept(compiled):
    # 34 MiB: above 32 MiB, where glibc maps each allocation afresh and every call faulted its
    # output in a 4 KiB page at a time (a prompt's logits: 19-21 ms of 100).
    x = mib_input(34)
    held = [compiled(x)]
    first = held[0].data_ptr()
    drop(held)
    assert luminal._C._large_output_bytes_kept() == 34 << 20
    held.append(compiled(x))
    assert held[0].data_ptr() == first, "the freed output's mapping was not reused"
    assert luminal._C._large_output_bytes_kept() == 0
    assert torch.equal(held[0], x * 2)
    # An output it cannot hold: the kept one goes, the new one is kept once freed.
    drop(held)
    big = mib_input(80)
    held.append(compiled(big))
    assert luminal._C._large_output_bytes_kept() == 0
    assert torch.equal(held[0], big * 2)
    drop(held)
    assert luminal._C._large_output_bytes_kept() == 80 << 20
    # A much smaller one does not pin it: 34 MiB of 80 is less than half.
    held.append(compiled(x))
    assert luminal._C._large_output_bytes_kept() == 0
    assert held[0].data_ptr() != 0 and torch.equal(held[0], x * 2)


def test_a_large_output_resizes_keeping_its_values(compiled):
    x = mib_input(34)
    out = compiled(x)
    flat = out.view(-1)
    flat.resize_(flat.numel() + (4 << 20))  # its storage grows through the allocator that made it
    assert torch.equal(flat[: x.numel()].view_as(x), x * 2)
    flat.resize_(10)
    assert torch.equal(flat, (x * 2).view(-1)[:10])


def test_a_large_output_clones_lazily(compiled):
    # Copy-on-write clones take only data pointers whose context is the data, as torch's are.
    x = mib_input(34)
    out = compiled(x)
    clone = torch._lazy_clone(out)
    clone.add_(1)
    assert torch.equal(out, x * 2)
    assert torch.equal(clone, x * 2 + 1)
