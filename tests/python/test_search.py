"""options={"search_iterations": N}: the cpu runtime times schedules on the first call of each
shape and keeps the faster one (docs/options.md). Results must equal eager's, the caller's
tensors must be written once however many calls the search timed, and the choices must be cached
so that a second compile of the same model searches nothing."""

from __future__ import annotations

import logging

import torch

from conftest import CountingBackend, assert_close


class Step(torch.nn.Module):
    """A layer big enough for kernels worth splitting, and a counter updated in place (as a
    StaticCache's rows are)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(256, 512)

    def forward(self, x, counts, positions):
        counts.index_add_(0, positions, torch.ones_like(positions, dtype=counts.dtype))
        return torch.softmax(self.linear(x).relu(), dim=-1)


def run_once(model, cache_dir, debug_dir):
    backend = CountingBackend({"search_iterations": 64, "cache_dir": str(cache_dir), "debug_dir": str(debug_dir)})
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(0))
    counts = torch.zeros(4)
    positions = torch.tensor([1, 1, 3])
    with torch.no_grad():
        out = compiled(x, counts, positions)
        expected_counts = torch.zeros(4)
        expected = model(x, expected_counts, positions)
    assert_close(out, expected)
    assert torch.equal(counts, expected_counts), "the search's timed calls must not touch the caller's tensors"
    return backend


def test_search_matches_eager_writes_once_and_is_cached(tmp_path):
    torch.manual_seed(0)
    model = Step()
    run_once(model, tmp_path / "cache", tmp_path / "first")
    entries = list((tmp_path / "cache" / "search").iterdir())
    assert len(entries) == 1
    assert "search: heuristic" in (tmp_path / "first" / "search_log.txt").read_text()
    torch._dynamo.reset()
    run_once(model, tmp_path / "cache", tmp_path / "second")
    assert "search: choices from" in (tmp_path / "second" / "search_log.txt").read_text()
    assert list((tmp_path / "cache" / "search").iterdir()) == entries


def test_a_damaged_search_record_is_searched_again_with_a_warning(tmp_path, caplog):
    torch.manual_seed(0)
    model = Step()
    run_once(model, tmp_path / "cache", tmp_path / "first")
    (entry,) = (tmp_path / "cache" / "search").iterdir()
    intact = entry.read_text()
    entry.write_text(intact[: len(intact) // 2])  # a torn write
    torch._dynamo.reset()
    with caplog.at_level(logging.WARNING, logger="luminal"):
        run_once(model, tmp_path / "cache", tmp_path / "second")
    assert any("is damaged; searching again" in r.getMessage() for r in caplog.records), caplog.text
    assert "search: heuristic" in (tmp_path / "second" / "search_log.txt").read_text()
    assert len(entry.read_text().splitlines()) == len(intact.splitlines())


class Decode(torch.nn.Module):
    """One decode-like step: a GEMV (one row through a Linear) and causal attention over 48 query
    rows, the two kernels the search tries other tiles of; the attention also gives the search a
    fusion choice (one kernel, or GEMMs around a softmax kernel)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(64, 96)

    def forward(self, token, q, k, v):
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(token), attended


def test_search_times_tiles_and_fusion_and_matches_eager(tmp_path):
    torch.manual_seed(0)
    model = Decode()
    backend = CountingBackend({"search_iterations": 64, "cache_dir": str(tmp_path / "cache"), "debug_dir": str(tmp_path)})
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    inputs = (torch.randn(1, 64), *(torch.randn(1, 4, 48, 32) for _ in range(3)))
    with torch.no_grad():
        out = compiled(*inputs)
        expected = model(*inputs)
    for got, want in zip(out, expected):
        assert_close(got, want)
    log = (tmp_path / "search_log.txt").read_text()
    assert "search: tile variants of 2 kernels" in log
    assert "fusion: attention kernels" in log and "GEMMs around softmax" in log
