"""luminal.compile: the ahead-of-time path from an ExportedProgram or a .pt2 file, and what bad
archives raise through the Python API."""

from __future__ import annotations

import io
import pathlib

import pytest
import torch

import luminal
from conftest import assert_close

FIXTURES = pathlib.Path(__file__).parent.parent / "pt2" / "fixtures"


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.norm = torch.nn.LayerNorm(4)

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.fc(x)))


def test_compile_exported_program():
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(3, 8)
    compiled = luminal.compile(torch.export.export(model, (x,)))
    for _ in range(3):
        x = torch.randn(3, 8)
        (out,) = compiled(x)
        assert_close(out, model(x).detach())


def test_compile_pt2_file(tmp_path):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(3, 8)
    path = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(model, (x,)), path)
    (out,) = luminal.compile(path)(x)
    assert_close(out, model(x).detach())


def test_core_reads_weights_from_a_decomposed_archive(tmp_path):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(3, 8)
    path = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(model, (x,)).run_decompositions(), path)
    program = luminal._C.compile_pt2_file(str(path), luminal._C.cpu_factory_capsule())
    (out,) = program.run([x])
    assert_close(out, model(x).detach())


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(luminal.UserError, match="no such PT2 file"):
        luminal.compile(tmp_path / "missing.pt2")


def test_non_zip_bytes_are_a_user_error(tmp_path):
    path = tmp_path / "garbage.pt2"
    path.write_bytes(b"this is not a zip archive")
    with pytest.raises(luminal.UserError, match="not a PT2 archive"):
        luminal.compile(path)
    with pytest.raises(luminal.UserError, match="not a PT2 archive"):
        luminal._C.compile_pt2_file(str(path), luminal._C.cpu_factory_capsule())


def test_truncated_archive_is_a_user_error(tmp_path):
    data = (FIXTURES / "mlp.pt2").read_bytes()
    path = tmp_path / "truncated.pt2"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(luminal.UserError, match="not a PT2 archive"):
        luminal._C.compile_pt2_file(str(path), luminal._C.cpu_factory_capsule())


def test_in_memory_garbage_is_a_user_error():
    with pytest.raises(luminal.UserError, match="not a PT2 archive"):
        luminal._C.compile_pt2(b"\x00" * 64, luminal._C.cpu_factory_capsule(), {}, {})


def test_unsupported_op_names_op_and_node():
    class Bessel(torch.nn.Module):
        def forward(self, x):
            return torch.special.i0(x)

    x = torch.randn(4)
    ep = torch.export.export(Bessel(), (x,))
    with pytest.raises(luminal.UnsupportedError, match=r"aten::i0.default has no native translation \(node 'i0'"):
        luminal.compile(ep, options={"fallback": "error"})


def test_untranslated_op_runs_through_the_aten_fallback_by_default():
    class Bessel(torch.nn.Module):
        def forward(self, x):
            return torch.special.i0(x) * 2

    x = torch.randn(4)
    compiled = luminal.compile(torch.export.export(Bessel(), (x,)))
    assert torch.equal(compiled(x)[0], Bessel()(x))
    assert compiled.stats["fallback_ops"] == ["aten::i0.default"]


def test_archive_round_trip_through_bytes():
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(2, 8)
    buffer = io.BytesIO()
    torch.export.save(torch.export.export(model, (x,)).run_decompositions(), buffer)
    program = luminal._C.compile_pt2(buffer.getvalue(), luminal._C.cpu_factory_capsule(), {}, {})
    (out,) = program.run([x])
    assert_close(out, model(x).detach())
