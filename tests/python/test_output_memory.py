"""Where a compiled call's CPU outputs live: a large one in huge pages of its own mapping, the
last one freed kept for the next call's output (csrc/bindings/huge_page_allocator.h)."""

from __future__ import annotations

import gc
import os

import pytest
import torch

import luminal
from conftest import CountingBackend

HUGE_PAGE = 2 << 20
THP_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"


def transparent_huge_pages() -> str | None:
    """The kernel's THP mode ("always", "madvise" or "never"), None where it has no setting."""
    if not os.path.exists(THP_SETTING):
        return None
    return open(THP_SETTING).read().split("[")[1].split("]")[0]


def mapping_of(address: int) -> dict[str, str] | None:
    """The /proc/self/smaps fields of the mapping holding `address`, None if none holds it."""
    found = None
    for line in open("/proc/self/smaps"):
        head = line.split()[0]
        if "-" in head and ":" not in head:
            low, high = (int(v, 16) for v in head.split("-"))
            if found is not None:
                break
            if low <= address < high:
                found = {"range": head}
        elif found is not None:
            key, value = line.split(":", 1)
            found[key] = value.strip()
    return found


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


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads the mappings from /proc")
def test_a_large_output_is_its_own_huge_page_mapping(compiled):
    # 34 MiB: above 32 MiB, where glibc maps each allocation afresh and every call used to fault
    # its output in a 4 KiB page at a time (a prompt's logits: 19-21 ms of 100).
    x = mib_input(34)
    out = compiled(x)
    assert torch.equal(out, x * 2)
    assert out.data_ptr() % HUGE_PAGE == 0, f"output at {out.data_ptr():#x}: not on a huge-page boundary"
    mapping = mapping_of(out.data_ptr())
    assert mapping is not None
    if transparent_huge_pages() in ("always", "madvise"):
        assert int(mapping["AnonHugePages"].split()[0]) > 0, mapping


def test_the_last_freed_output_is_the_next_calls_and_only_it_is_kept(compiled):
    x = mib_input(34)
    held = [compiled(x)]
    first = held[0].data_ptr()
    drop(held)
    assert luminal._C._huge_page_bytes_kept() == 34 << 20
    held.append(compiled(x))
    assert held[0].data_ptr() == first, "the freed output's mapping was not reused"
    assert luminal._C._huge_page_bytes_kept() == 0
    assert torch.equal(held[0], x * 2)
    # An output it cannot hold: the kept one goes, the new one is kept once freed.
    drop(held)
    big = mib_input(80)
    held.append(compiled(big))
    assert luminal._C._huge_page_bytes_kept() == 0
    assert torch.equal(held[0], big * 2)
    drop(held)
    assert luminal._C._huge_page_bytes_kept() == 80 << 20
    # A much smaller one does not pin it: 34 MiB of 80 is less than half.
    held.append(compiled(x))
    assert luminal._C._huge_page_bytes_kept() == 0
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
