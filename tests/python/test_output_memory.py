"""Where a compiled call's CPU outputs live: a large one in huge pages of its own mapping."""

from __future__ import annotations

import gc
import os

import pytest
import torch

from conftest import CountingBackend

HUGE_PAGE = 2 << 20
# csrc/bindings/huge_page_allocator.h: kHugePageThreshold (glibc's largest mmap threshold).
THRESHOLD = 32 << 20
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


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="reads the mappings from /proc")
def test_a_large_output_is_its_own_huge_page_mapping_unmapped_when_freed():
    # 34 MiB: above the threshold, where glibc maps each allocation afresh and every call used
    # to fault its output in a 4 KiB page at a time (a prompt's logits: 19-21 ms of 100).
    torch.manual_seed(0)
    x = torch.randn(1024, 34 * 256)
    backend = CountingBackend()
    compiled = torch.compile(doubled, backend=backend)
    for _ in range(2):  # the second call is the steady state: the arenas exist
        out = compiled(x)
    assert backend.compiled, "luminal did not compile the graph"
    assert torch.equal(out, x * 2)
    address = out.data_ptr()
    assert out.untyped_storage().nbytes() >= THRESHOLD
    assert address % HUGE_PAGE == 0, f"output at {address:#x}: not on a huge-page boundary"
    mapping = mapping_of(address)
    assert mapping is not None
    if transparent_huge_pages() in ("always", "madvise"):
        assert int(mapping["AnonHugePages"].split()[0]) > 0, mapping
    del out
    gc.collect()
    assert mapping_of(address) is None, "the output's mapping outlived the tensor"


def test_a_large_output_resizes_keeping_its_values():
    torch.manual_seed(0)
    x = torch.randn(1024, 34 * 256)
    compiled = torch.compile(doubled, backend=CountingBackend())
    out = compiled(x)
    flat = out.view(-1)
    flat.resize_(flat.numel() + (4 << 20))  # its storage grows through the allocator that made it
    assert torch.equal(flat[: x.numel()].view_as(x), x * 2)
    flat.resize_(10)
    assert torch.equal(flat, (x * 2).view(-1)[:10])



def test_a_large_output_clones_lazily():
    # Copy-on-write clones take only data pointers whose context is the data, as torch's are.
    torch.manual_seed(0)
    x = torch.randn(1024, 34 * 256)
    out = torch.compile(doubled, backend=CountingBackend())(x)
    clone = torch._lazy_clone(out)
    clone.add_(1)
    assert torch.equal(out, x * 2)
    assert torch.equal(clone, x * 2 + 1)
