"""The export cache: a second compile of the same graph (a new process, or after
torch._dynamo.reset()) reuses the exported archive instead of running torch.export again, and
still binds the caller's own weights. Anything export reads that differs is a miss."""

from __future__ import annotations

import subprocess
import sys
import logging
import textwrap

import pytest
import torch

from conftest import CountingBackend, assert_close


class Net(torch.nn.Module):
    def __init__(self, scale: float = 2.0) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.fc(x)) * self.scale + torch.tensor([1.0, 2.0, 3.0, 4.0])


def compile_once(model, x, cache_dir):
    """Through the inference path (no_grad), the one that exports with torch.export."""
    torch._dynamo.reset()
    backend = CountingBackend({"cache_dir": str(cache_dir)})
    with torch.no_grad():
        out = torch.compile(model, backend=backend)(x)
    return out, backend.compiled[0].stats


def test_second_compile_hits_and_binds_the_new_weights(tmp_path):
    x = torch.randn(3, 8)
    first, stats = compile_once(Net().eval(), x, tmp_path)
    assert stats["export_cache_hit"] is False
    other = Net().eval()  # same graph, other weights
    second, stats = compile_once(other, x, tmp_path)
    assert stats["export_cache_hit"] is True
    assert_close(second, other(x))
    assert not torch.allclose(first, second)


def test_a_different_graph_or_shape_misses(tmp_path):
    x = torch.randn(3, 8)
    compile_once(Net().eval(), x, tmp_path)
    _, stats = compile_once(Net(scale=3.0).eval(), x, tmp_path)  # a constant in the graph changed
    assert stats["export_cache_hit"] is False
    _, stats = compile_once(Net().eval(), torch.randn(5, 8), tmp_path)  # another static shape
    assert stats["export_cache_hit"] is False
    _, stats = compile_once(Net().eval().double(), x.double(), tmp_path)  # another dtype
    assert stats["export_cache_hit"] is False


def test_an_unreadable_entry_is_a_miss_and_is_rewritten(tmp_path, caplog):
    model, x = Net().eval(), torch.randn(3, 8)
    compile_once(model, x, tmp_path)
    (entry,) = (tmp_path / "exports").glob("*.pkl")
    entry.write_bytes(b"not a pickle")
    with caplog.at_level(logging.WARNING, logger="luminal"):
        out, stats = compile_once(model, x, tmp_path)
    assert stats["export_cache_hit"] is False
    assert any("damaged export cache entry" in r.getMessage() for r in caplog.records), caplog.text
    assert_close(out, model(x))
    _, stats = compile_once(model, x, tmp_path)
    assert stats["export_cache_hit"] is True


def test_a_second_process_skips_export(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, torch
        sys.path.insert(0, {str(tmp_path.parent)!r})
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()).eval()
        captured = []
        import luminal
        def backend(gm, inputs, **kw):
            captured.append(luminal.luminal_backend(gm, inputs, options={{"cache_dir": {str(tmp_path)!r}}}))
            return captured[-1]
        x = torch.randn(2, 8)
        with torch.no_grad():
            out = torch.compile(model, backend=backend)(x)
        torch.testing.assert_close(out, model(x))
        print("HIT" if captured[0].stats["export_cache_hit"] else "MISS")
        """
    )
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert [r.stdout.strip().splitlines()[-1] for r in runs] == ["MISS", "HIT"]


def test_tensor_subclass_attributes_are_part_of_the_key(tmp_path):
    """torchao's int8 weight-only and int8 dynamic-activation weights are one tensor subclass
    that differs only in a flattened attribute, and trace to different graphs (the second
    quantizes its activations): the second model must not reuse the first's export."""
    quantization = pytest.importorskip("torchao.quantization", reason="torchao==0.18.0 (scripts/install_deps.sh)")
    x = torch.randn(1, 8)
    weight_only = Net().eval()
    quantization.quantize_(weight_only, quantization.Int8WeightOnlyConfig())
    compile_once(weight_only, x, tmp_path)
    dynamic = Net().eval()
    quantization.quantize_(dynamic, quantization.Int8DynamicActivationInt8WeightConfig())
    out, stats = compile_once(dynamic, x, tmp_path)
    assert stats["export_cache_hit"] is False
    with torch.no_grad():
        assert_close(out, dynamic(x))
