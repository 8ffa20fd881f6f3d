"""Damaged and hostile .pt2 files: every kind of damage is a UserError naming the entry and the
field at fault, raised before anything the archive claims is allocated; an op nobody knows is
refused at compile, not at the first call; metadata that disagrees with the ops is the
archive's fault, not an internal error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Callable

import pytest
import torch

import luminal
from test_aot import Net  # the AOT tests' model: its archive's entries are what these damage


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("archives") / "net.pt2"
    torch.export.save(torch.export.export(Net().eval(), (torch.randn(3, 8),)).run_decompositions(), path)
    return path


def rewrite(source: Path, target: Path, edits: dict[str, Callable[[bytes], bytes | None]]) -> Path:
    """Copies the archive, passing the named entries through their edit (None drops the entry)."""
    import zipfile

    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename in edits:
                data = edits[info.filename](data)
                if data is None:
                    continue
            zout.writestr(info, data)
    return target


def edit_json(change: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        document = json.loads(data)
        change(document)
        return json.dumps(document).encode()

    return edit


MODEL = "net/models/model.json"
WEIGHTS = "net/data/weights/model_weights_config.json"


def fc_weight_meta(document: dict) -> dict:
    return document["config"]["fc.weight"]["tensor_meta"]


DAMAGE = {
    "model json not json": ({MODEL: lambda data: data[: len(data) // 2]}, "models/model.json"),
    "weight entry missing": ({"net/data/weights/weight_0": lambda data: None}, "which is missing"),
    "weight entry short": ({"net/data/weights/weight_0": lambda data: data[:40]}, "holds 40 bytes but its metadata needs 128"),
    "weight meta without sizes": (
        {WEIGHTS: edit_json(lambda d: fc_weight_meta(d).pop("sizes"))},
        "sizes",
    ),
    "weight with a negative size": (
        {WEIGHTS: edit_json(lambda d: fc_weight_meta(d)["sizes"].__setitem__(0, {"as_int": -4}))},
        "negative size",
    ),
    "weight of 2^62 elements": (
        {WEIGHTS: edit_json(lambda d: fc_weight_meta(d)["sizes"].__setitem__(0, {"as_int": 2**62}))},
        "overflow",
    ),
    "weight pickled": (
        {WEIGHTS: edit_json(lambda d: d["config"]["fc.weight"].__setitem__("use_pickle", True))},
        "pickled",
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damage_is_a_user_error_naming_entry_and_field(archive: Path, tmp_path: Path, case: str) -> None:
    edits, expected = DAMAGE[case]
    damaged = rewrite(archive, tmp_path / "damaged.pt2", edits)
    with pytest.raises((luminal.UserError, luminal.UnsupportedError)) as raised:
        luminal.compile(damaged)
    message = str(raised.value)
    assert expected in message, message
    assert "check the warnings above" not in message and "torch can load" not in message, message


# Runs luminal.compile on argv[1] with the address space capped 384 MiB above what torch itself
# maps: an archive that gets its hostile entry inflated, or its tensor allocated, dies of it.
CAPPED_CHILD = textwrap.dedent(
    """
    import resource, sys, torch, luminal
    with open("/proc/self/status") as status:
        vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    cap = vm + (384 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    for name, compile in [("compile", luminal.compile),
                          ("core", lambda p: luminal._C.compile_pt2_file(p, luminal._C.cpu_factory_capsule()))]:
        try:
            compile(sys.argv[1])
            print(name, "COMPILED")
        except luminal.UserError as error:
            print(name, "USERERROR", error)
        except MemoryError as error:
            print(name, "MEMORYERROR", error)
    """
)


def deflated_zeros(size: int) -> bytes:
    """`size` zero bytes as a raw deflate stream (what a zip entry holds): ~1/1000 of the size."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, -15)
    chunk = bytes(64 << 20)
    parts = [compressor.compress(chunk) for _ in range(size // len(chunk))]
    return b"".join(parts) + compressor.flush()


def test_an_entry_inflating_to_a_gigabyte_is_refused_before_it_is_inflated(archive: Path, tmp_path: Path) -> None:
    # A real deflated entry whose header honestly declares 1 GiB, for a 128-byte tensor.
    bomb = tmp_path / "bomb.pt2"
    size = 1 << 30
    write_raw_deflate_entry(archive, bomb, "net/data/weights/weight_0", deflated_zeros(size), size)
    assert bomb.stat().st_size < 16 << 20
    result = subprocess.run(
        [sys.executable, "-c", CAPPED_CHILD, str(bomb)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for name in ("compile", "core"):
        (line,) = [line for line in lines if line.startswith(name + " ")]
        assert "USERERROR" in line and "weight_0" in line and f"declares {size} bytes" in line, line


def write_raw_deflate_entry(source: Path, target: Path, name: str, deflated: bytes, size: int) -> None:
    """Copies `source` to `target` with entry `name` replaced by an already-deflated stream of
    `size` bytes (zipfile would otherwise deflate a gigabyte itself)."""
    import zipfile

    crc = 0
    zero_chunk = bytes(64 << 20)
    for _ in range(size // len(zero_chunk)):
        crc = zlib.crc32(zero_chunk, crc)
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for info in zin.infolist():
            if info.filename != name:
                zout.writestr(info, zin.read(info.filename))
                continue
            entry = zipfile.ZipInfo(name, date_time=info.date_time)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.file_size, entry.compress_size, entry.CRC = size, len(deflated), crc
            entry.header_offset = zout.fp.tell()
            zout.fp.write(entry.FileHeader(zip64=False))
            zout.fp.write(deflated)
            zout.start_dir = zout.fp.tell()
            zout.filelist.append(entry)
            zout.NameToInfo[name] = entry


def test_an_unknown_op_is_refused_at_compile_not_at_the_first_call(archive: Path, tmp_path: Path) -> None:
    def rename_gelu(document: dict) -> None:
        (node,) = [n for n in document["graph_module"]["graph"]["nodes"] if "gelu" in n["target"]]
        node["target"] = "torch.ops.aten.not_an_op.default"

    damaged = rewrite(archive, tmp_path / "unknown.pt2", {MODEL: edit_json(rename_gelu)})
    with pytest.raises(luminal.UnsupportedError, match=r"node 'gelu' \(aten::not_an_op.default\).*no operator"):
        luminal._C.compile_pt2_file(str(damaged), luminal._C.cpu_factory_capsule())


def test_metadata_that_disagrees_with_the_ops_is_the_archives_fault(archive: Path, tmp_path: Path) -> None:
    def resize_gelu(document: dict) -> None:
        values = document["graph_module"]["graph"]["tensor_values"]
        (name,) = [k for k in values if k.startswith("gelu")]
        values[name]["sizes"][0] = {"as_int": 5}

    damaged = rewrite(archive, tmp_path / "resized.pt2", {MODEL: edit_json(resize_gelu)})
    with pytest.raises(luminal.UserError, match=r"tensor_values\['gelu'\]\.sizes is \[5, 4\], but the op computes \[3, 4\]"):
        luminal._C.compile_pt2_file(str(damaged), luminal._C.cpu_factory_capsule())


# Archives fuzz_compile made (tests/fuzz), each of which reached an InternalError before.
DAMAGED = Path(__file__).parent.parent / "pt2" / "fixtures" / "damaged"
FUZZ_FINDINGS = {
    "matmul_symbolic_inner_dim.pt2": r"node 'addmm' \(aten::addmm.default\): matmul of \[16, s77\] and \[16, 32\]: "
    r"sizes s77 and 16 must be equal",
    "add_symbolic_broadcast.pt2": r"broadcasting \[s77, 16\] with \[32, 16\]: sizes s77 and 32 must be equal",
    "sym_numel_tensor_output.pt2": r"node 'addmm_1' \(aten::sym_numel.default\): output 0 is as_tensor, expected a "
    r"named SymInt",
}


@pytest.mark.parametrize("name", sorted(FUZZ_FINDINGS))
def test_fuzzed_archives_are_user_errors(name: str) -> None:
    with pytest.raises(luminal.UserError, match=FUZZ_FINDINGS[name]):
        luminal._C.compile_pt2_file(str(DAMAGED / name), luminal._C.cpu_factory_capsule(), {"fallback": "error"})
