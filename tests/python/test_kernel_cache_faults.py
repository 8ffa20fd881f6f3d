"""The kernel cache under damage: truncated, random or empty libraries are rebuilt with a
warning, an unwritable cache names itself, Ctrl-C during a build is a KeyboardInterrupt that
leaves no temp files. Each case runs in a fresh process, as a user's next run would."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# Compiles a small MLP with the kernel cache in argv[1], checks it against eager, and prints
# the luminal logger's warnings. argv[2], when given, sizes the model: a large one keeps g++
# busy for seconds (the interrupt test needs a build in flight).
CHILD = textwrap.dedent(
    """
    import copy, logging, signal, sys, torch, luminal
    # Ctrl-C at a terminal reaches a process whose SIGINT is Python's handler. A test run started
    # in a script's background (`scripts/test.sh &`) inherits SIGINT ignored, and exec keeps it
    # ignored in this child and in its compilers: the interrupt would reach nothing.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    logging.basicConfig(level=logging.WARNING, format="LOG %(name)s %(levelname)s %(message)s")
    torch.manual_seed(0)
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    blocks = []
    for i in range(layers):  # every width differs: no two layers share a kernel
        blocks += [torch.nn.Linear(16 + i, 17 + i), torch.nn.GELU(), torch.nn.LayerNorm(17 + i)]
    model = torch.nn.Sequential(*blocks).eval()
    x = torch.randn(3, 16)
    with torch.no_grad():
        compiled = torch.compile(model, backend="luminal", options={"cache_dir": sys.argv[1]})
        got, expected = compiled(x), model(x)
        if layers == 1:
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
        else:  # f32 rounding compounds through the LayerNorms: judge both by the f64 model
            exact = copy.deepcopy(model).double()(x.double())
            eager_error = (expected.double() - exact).abs().max().item()
            error = (got.double() - exact).abs().max().item()
            assert error <= 4 * eager_error + 1e-6, f"{error} from the f64 model (eager: {eager_error})"
    print("OK")
    """
)


def run_child(cache: Path, *extra: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "LUMINAL_CACHE_DIR": str(cache)}  # the export cache too
    return subprocess.run(
        [*prefix, sys.executable, "-c", CHILD, str(cache), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def kernel_libraries(cache: Path) -> list[Path]:
    return sorted((cache / "cpu").glob("*.so"))


@pytest.fixture
def warm_cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    first = run_child(cache)
    assert first.returncode == 0, first.stderr
    assert kernel_libraries(cache), "the first run published no kernel library"
    return cache


def damage_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 3 // 8])  # 25-50% of it, as a full disk leaves it


def damage_random(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def damage_empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("damage", [damage_truncate, damage_random, damage_empty], ids=["truncated", "random", "empty"])
def test_a_damaged_kernel_library_is_rebuilt_with_a_warning(warm_cache: Path, damage) -> None:
    intact = {path: path.read_bytes() for path in kernel_libraries(warm_cache)}
    for path in intact:
        damage(path)
    again = run_child(warm_cache)
    assert again.returncode == 0, f"rc {again.returncode} (signal {-again.returncode}): {again.stderr[-3000:]}"
    assert "OK" in again.stdout
    assert "LOG luminal WARNING" in again.stderr and "is damaged" in again.stderr, again.stderr[-3000:]
    for path, original in intact.items():
        rebuilt = path.read_bytes()
        assert rebuilt[-60:-52] == b"LUMKSO01" and len(rebuilt) == len(original), f"{path} was not rebuilt"
    # The rebuilt entries are trusted silently from now on.
    third = run_child(warm_cache)
    assert third.returncode == 0 and "damaged" not in third.stderr, third.stderr[-3000:]


def test_a_library_without_the_checksum_trailer_is_not_trusted(warm_cache: Path) -> None:
    # A complete ELF that luminal did not publish (a copy from elsewhere, an older layout).
    for path in kernel_libraries(warm_cache):
        data = path.read_bytes()
        path.write_bytes(data[:-60])
    again = run_child(warm_cache)
    assert again.returncode == 0 and "is damaged" in again.stderr, again.stderr[-3000:]


def drop_root_permissions() -> tuple[str, ...]:
    """Root writes anywhere: without CAP_DAC_OVERRIDE its child honours permission bits."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only directory cannot be made")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")


def test_an_unwritable_cache_directory_is_named_with_the_permission(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "cpu").mkdir(parents=True)
    (cache / "cpu").chmod(0o555)
    try:
        result = run_child(cache, prefix=drop_root_permissions())
    finally:
        (cache / "cpu").chmod(0o755)
    assert result.returncode != 0
    assert "UserError" in result.stderr, result.stderr[-3000:]
    assert f"cannot write to the kernel cache directory {cache / 'cpu'}: Permission denied" in result.stderr
    assert "cannot run the C++ compiler" not in result.stderr
    assert "InternalError" not in result.stderr


def test_a_read_only_cache_that_holds_every_kernel_still_runs(warm_cache: Path) -> None:
    (warm_cache / "cpu").chmod(0o555)
    try:
        result = run_child(warm_cache, prefix=drop_root_permissions())
    finally:
        (warm_cache / "cpu").chmod(0o755)
    assert result.returncode == 0 and "OK" in result.stdout, result.stderr[-3000:]


def compilers_running(process_group: int) -> bool:
    listing = subprocess.run(["ps", "-o", "comm=", "-g", str(process_group)], capture_output=True, text=True).stdout
    return "cc1plus" in listing.split()


def test_ctrl_c_during_the_kernel_build_is_a_keyboard_interrupt_that_leaves_no_temp_files(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "LUMINAL_CACHE_DIR": str(cache)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(cache), "40"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, as a terminal's Ctrl-C reaches it
    )
    try:
        deadline = time.monotonic() + 240
        while not compilers_running(child.pid):
            assert child.poll() is None, f"the child ended before building kernels: {child.communicate()}"
            assert time.monotonic() < deadline, "no kernel build started"
            time.sleep(0.02)
        os.killpg(child.pid, signal.SIGINT)
        stdout, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert "OK" not in stdout, "the child ran to its end: the interrupt reached neither it nor its compilers"
    assert "KeyboardInterrupt" in stderr, stderr[-3000:]
    assert "InternalError" not in stderr and "please report" not in stderr, stderr[-3000:]
    assert list((cache / "cpu").glob("tmp-*")) == []


def test_temp_files_left_by_a_killed_build_are_swept_once_stale(tmp_path: Path) -> None:
    cpu = tmp_path / "cache" / "cpu"
    cpu.mkdir(parents=True)
    stale, fresh = cpu / "tmp-0-1-0.cpp", cpu / "tmp-0-2-0.cpp"
    stale.write_text("left by a killed build")
    fresh.write_text("a build in flight in another process")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(stale, (two_hours_ago, two_hours_ago))
    result = run_child(tmp_path / "cache")
    assert result.returncode == 0, result.stderr[-3000:]
    assert not stale.exists()
    assert fresh.exists()
