"""The backend's contract with torch.compile: registration, options, errors, mutations."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch
import torch._dynamo

import luminal
from conftest import CountingBackend, assert_close


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_backend_by_name_is_registered():
    assert "luminal" in torch._dynamo.list_backends()
    model = MLP().eval()
    x = torch.randn(4, 16)
    compiled = torch.compile(model, backend="luminal", fullgraph=True)
    assert_close(compiled(x), model(x))


def test_backend_runs_and_serves_three_calls():
    torch.manual_seed(0)
    model = MLP().eval()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    for _ in range(3):
        x = torch.randn(4, 16)
        assert_close(compiled(x), model(x))
    assert len(backend.compiled) == 1


def test_register_backend_with_cpu_capsule():
    capsule = luminal._C.cpu_factory_capsule()
    backend = luminal.register_backend(capsule)
    model = MLP().eval()
    x = torch.randn(2, 16)
    assert_close(torch.compile(model, backend=backend)(x), model(x))
    assert luminal._C.factory_info(capsule)["device"] == "cpu"


def test_register_backend_rejects_other_objects():
    with pytest.raises(luminal.UserError, match="runtime factory capsule"):
        luminal.register_backend(object())


def test_unknown_option_lists_valid_ones():
    model = MLP().eval()
    compiled = torch.compile(model, backend="luminal", options={"no_such_option": 1})
    with pytest.raises(Exception) as info:
        compiled(torch.randn(2, 16))
    assert isinstance(_inner(info.value), luminal.UserError)
    assert "num_threads" in str(info.value)


def test_cpu_isa_option_names_its_values():
    compiled = torch.compile(MLP().eval(), backend="luminal", options={"cpu_isa": "avx512"})
    with pytest.raises(Exception) as info:
        compiled(torch.randn(2, 16))
    assert isinstance(_inner(info.value), luminal.UserError)
    assert "'cpu_isa' must be one of ('native', 'avx2'), got 'avx512'" in str(info.value)


def test_profile_option_times_each_step_of_the_last_call():
    """options={"profile": True}: stats["step_ms_last_run"] lists every step of the last call in
    order with its time, named as debug_dir's stats name them; without it the list is empty."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 8))
    x = torch.randn(4, 64)
    for profile in (True, False):
        torch._dynamo.reset()
        backend = CountingBackend({"profile": profile})
        compiled = torch.compile(model, backend=backend)
        with torch.no_grad():
            compiled(x)
            started = time.perf_counter()
            assert_close(compiled(x), model(x))
            call_ms = (time.perf_counter() - started) * 1e3
        steps = backend.compiled[0].stats["step_ms_last_run"]
        if not profile:
            assert steps == []
            continue
        assert steps and all(isinstance(what, str) and what and ms >= 0 for what, ms in steps), steps
        assert any("gemv" in what or "matmul" in what for what, _ in steps), steps
        assert 0 < sum(ms for _, ms in steps) <= call_ms, (steps, call_ms)
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(model, backend="luminal", options={"profile": 1})(x)
    assert isinstance(_inner(info.value), luminal.UserError)
    assert "'profile' must be bool" in str(info.value)


@pytest.mark.parametrize("grad_enabled", [False, True], ids=["inference", "training"])
def test_weights_are_bound_not_copied(grad_enabled):
    model = torch.nn.Sequential(torch.nn.Linear(16, 512), torch.nn.Linear(512, 256)).eval()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(2, 16)
    with torch.set_grad_enabled(grad_enabled):
        compiled(x)
    # With grad enabled (parameters require grad) the training path compiles a forward graph.
    stats = backend.compiled[0].stats["forward"] if grad_enabled else backend.compiled[0].stats
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert stats["archive_bytes"] < weight_bytes / 10, "weights were serialised into the archive"
    # An in-place update of a weight is seen by the next call: the core reads the caller's memory.
    with torch.no_grad():
        model[1].bias.add_(1.0)
    with torch.set_grad_enabled(grad_enabled):
        assert_close(compiled(x), model(x))


def test_a_weight_whose_storage_is_replaced_is_read_from_its_new_storage():
    """`p.data = ...` keeps the shape, so dynamo's guards pass and reuse the program: each call
    compares the storage of every bound weight and rebinds the ones that moved."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(4, 16)
    with torch.no_grad():
        assert_close(compiled(x), model(x))
        for replaced in (model[2].weight, model[0].bias, model[2].weight):
            replaced.data = torch.randn_like(replaced)
            assert_close(compiled(x), model(x))
    assert len(backend.compiled) == 1


def test_user_input_and_buffer_mutations_land_in_callers_tensors():
    class Mutating(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("count", torch.zeros(1))

        def forward(self, x, state):
            state.add_(x.sum())
            self.count.add_(1)
            return state * 2

    model = Mutating()
    reference = Mutating()
    compiled = torch.compile(model, backend=CountingBackend(), fullgraph=True)
    state, expected_state = torch.zeros(3), torch.zeros(3)
    for _ in range(3):
        x = torch.randn(3)
        out = compiled(x, state)
        expected = reference(x, expected_state)
        assert_close(out, expected)
        assert_close(state, expected_state)
    assert model.count.item() == 3


def test_batch_norm_running_stats_land_in_the_modules_buffers():
    """Training-mode BatchNorm updates running_mean, running_var and num_batches_tracked: in the
    module's own tensors (same storage), with eager's values, call after call."""

    def make() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU()).train()

    model, reference = make(), make()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    norm, reference_norm = model[1], reference[1]
    pointers = [norm.running_mean.data_ptr(), norm.running_var.data_ptr()]
    with torch.no_grad():
        for step in range(3):
            x = torch.randn(5, 6, generator=torch.Generator().manual_seed(step))
            assert_close(compiled(x), reference(x))
            assert_close(norm.running_mean, reference_norm.running_mean)
            assert_close(norm.running_var, reference_norm.running_var)
            assert norm.num_batches_tracked.item() == reference_norm.num_batches_tracked.item() == step + 1
    assert [norm.running_mean.data_ptr(), norm.running_var.data_ptr()] == pointers
    assert len(backend.compiled) == 1


def test_input_dtype_mismatch_is_a_user_error():
    model = MLP().eval()
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        compiled(torch.randn(2, 16))
    program = backend.compiled[0]
    args = [torch.randn(2, 16, dtype=torch.float64)]
    with pytest.raises(luminal.UserError, match="dtype"):
        program._bound.program.run(args)


def test_cuda_tensors_without_cuda_build_are_an_error(monkeypatch):
    # No GPU here: stand in for CUDA inputs at the point where the runtime is chosen, and for a
    # build without LUMINAL_CUDA.
    monkeypatch.setattr(luminal.backend, "_inputs_device", lambda inputs: torch.device("cuda"))
    monkeypatch.setattr(luminal.backend._C, "has_cuda", False)
    with pytest.raises(luminal.UserError, match=r"no CUDA runtime \(it was built without -DLUMINAL_CUDA=ON\)"):
        luminal.backend.default_factory([])


def test_tensor_on_another_device_is_rejected_by_the_core():
    model = MLP().eval()
    backend = CountingBackend()
    with torch.no_grad():
        torch.compile(model, backend=backend)(torch.randn(2, 16))
    with pytest.raises(luminal.UserError, match="device 'meta'"):
        backend.compiled[0]._bound.program.run([torch.empty(2, 16, device="meta")])


def _inner(error: BaseException) -> BaseException:
    """dynamo wraps backend errors in BackendCompilerFailed; the cause is ours."""
    return getattr(error, "inner_exception", error)


@pytest.mark.parametrize("grad_enabled", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("runtime", [None, "cpu", "reference"])
def test_runtime_option_selects_the_runtime(runtime, grad_enabled):
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(4, 16)
    backend = CountingBackend(options={} if runtime is None else {"runtime": runtime})
    with torch.set_grad_enabled(grad_enabled):
        out = torch.compile(model, backend=backend)(x)
        assert_close(out, model(x))
    if not grad_enabled:
        assert backend.compiled[0].stats["runtime"] == (runtime or "cpu")
        return
    out.sum().backward()  # compiles the backward graph
    stats = backend.compiled[0].stats
    assert stats["forward"]["runtime"] == stats["backward"]["runtime"] == (runtime or "cpu")


def test_reference_runtime_for_the_aot_path():
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(4, 16)
    compiled = luminal.compile(torch.export.export(model, (x,)), options={"runtime": "reference"})
    assert_close(compiled(x)[0], model(x))
    assert compiled.stats["runtime"] == "reference"


def test_unknown_runtime_lists_the_valid_ones():
    model = MLP().eval()
    compiled = torch.compile(model, backend="luminal", options={"runtime": "gpu"})
    with pytest.raises(Exception) as info:
        compiled(torch.randn(2, 16))
    assert isinstance(_inner(info.value), luminal.UserError)
    assert "unknown luminal runtime 'gpu'; valid runtimes are: 'cpu', 'reference'" in str(info.value)
    with pytest.raises(luminal.UserError, match="valid runtimes are: 'cpu', 'reference'"):
        luminal.compile(torch.export.export(model, (torch.randn(2, 16),)), options={"runtime": "interpreter"})


@pytest.mark.parametrize(
    "vendor, flags, expected",
    [
        ("GenuineIntel", "fma avx2 avx512f avx512bw avx512vl avx512dq avx512cd avx512_bf16", "Cooperlake"),
        ("AuthenticAMD", "fma avx2 avx512f avx512bw avx512vl avx512dq avx512cd", "SkylakeX"),
        ("GenuineIntel", "fma avx avx2", "Haswell"),
        ("AuthenticAMD", "fma avx avx2", "Zen"),
        ("GenuineIntel", "sse4_2 avx", None),
    ],
)
def test_openblas_kernels_follow_the_cpu_features(vendor, flags, expected):
    """OpenBLAS 0.3.21 falls back to SSE3 kernels on a CPU model it does not know (4x slower
    sgemm on an Emerald Rapids Xeon); the features name the kernels instead."""
    from luminal.openblas_env import openblas_core_for

    assert openblas_core_for(vendor, set(flags.split())) == expected


@pytest.mark.parametrize("given", [None, "Haswell"])
def test_loaded_openblas_runs_the_kernels_of_this_cpu_unless_the_user_says(given):
    """Importing luminal sets OPENBLAS_CORETYPE before its OpenBLAS loads; the loaded library
    reports that core (on this machine, whatever its model number), and a user's choice stands."""
    script = textwrap.dedent(
        """
        import ctypes, os
        import luminal
        from luminal.openblas_env import _cpu_flags, openblas_core_for

        path = next(line.split()[-1] for line in open("/proc/self/maps") if "/libopenblas" in line)
        openblas = ctypes.CDLL(path)
        openblas.openblas_get_corename.restype = ctypes.c_char_p
        print(openblas.openblas_get_corename().decode(), openblas_core_for(*_cpu_flags()))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if given is not None:
        env["OPENBLAS_CORETYPE"] = given
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    loaded, for_this_cpu = run.stdout.strip().splitlines()[-1].split()
    expected = given or for_this_cpu
    if expected == "None":
        pytest.skip("this CPU has neither AVX2 nor AVX-512: OpenBLAS keeps its own detection")
    assert loaded.lower() == expected.lower()


def test_a_calls_kernels_run_on_torchs_openmp_team_not_a_pool_beside_it():
    """Where torch runs an OpenMP team, the cpu runtime's kernels split across it: a pool of our
    own beside it put three busy threads on two cores whenever either spun after its work
    (libgomp's workers ~9 ms after each parallel op of the caller's, ours 1 ms), and the caller
    waited a scheduler tick for a descheduled worker (BERT's bf16 prefill 15 or 20-24 ms by
    process). Our pool's workers are never started then, the team keeps its threads across the
    call, and the kernels' CPU time is on torch's threads."""
    script = textwrap.dedent(
        """
        import os
        import time
        import torch
        import luminal

        if not any("/libgomp" in line for line in open("/proc/self/maps")):
            print("SKIP torch runs no libgomp here")
            raise SystemExit(0)
        torch.set_num_threads(2)

        def cpu_ticks_by_name():
            ticks = {}
            for t in os.listdir("/proc/self/task"):
                name = open(f"/proc/self/task/{t}/comm").read().strip()
                fields = open(f"/proc/self/task/{t}/stat").read().rsplit(")", 1)[1].split()
                ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])  # utime + stime
            return ticks

        compiled = torch.compile(lambda x: (x * 2 + 1).exp(), backend="luminal", options={"num_threads": 2})
        x = torch.randn(1024, 4096)
        expected = (x * 2 + 1).exp()
        compiled(x)
        big = torch.randn(1 << 22)
        big.sum()  # the team exists (a parallel op of the caller's)
        threads_before = len(os.listdir("/proc/self/task"))
        before = cpu_ticks_by_name()
        for _ in range(30):
            y = compiled(x)
            time.sleep(0.015)  # past libgomp's spin after each call
        after = cpu_ticks_by_name()
        assert torch.allclose(y, expected, rtol=1e-5)
        pool = after.get("luminal-pool", 0) - before.get("luminal-pool", 0)
        others = sum(after.values()) - sum(before.values()) - pool
        print(threads_before, len(os.listdir("/proc/self/task")), "luminal-pool" in after, pool, others)
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    last = run.stdout.strip().splitlines()[-1]
    if last.startswith("SKIP"):
        pytest.skip(last[5:])
    threads_before, threads_after, pool_exists, pool_ticks, other_ticks = last.split()
    assert pool_exists == "False" and int(pool_ticks) == 0, last  # our pool never started
    assert threads_after == threads_before, last  # the call left torch's team as it was
    assert int(other_ticks) > 0, last


def test_a_forked_child_with_one_torch_thread_runs_a_compiled_call():
    """A forked child (a DataLoader worker) has none of its parent's OpenMP team, and libgomp
    hangs there in a parallel region of two; torch's own ops run there because the worker sets
    torch.set_num_threads(1). The cpu runtime's kernels, which run on torch's team, take no more
    threads than torch's ops do, so the child's compiled call runs (on one thread)."""
    script = textwrap.dedent(
        """
        import os
        import signal
        import time
        import torch
        import luminal

        torch.set_num_threads(2)
        compiled = torch.compile(lambda x: (x * 2 + 1).exp(), backend="luminal", options={"num_threads": 2})
        x = torch.randn(1024, 4096)
        compiled(x)  # the parent's team exists
        pid = os.fork()
        if pid == 0:
            torch.set_num_threads(1)
            os._exit(0 if torch.allclose(compiled(x), (x * 2 + 1).exp(), rtol=1e-5) else 3)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print(os.waitstatus_to_exitcode(status))
                raise SystemExit(0)
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)  # hung: leave no process behind
        os.waitpid(pid, 0)
        print("the child hung")
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "0", run.stdout


def test_kernels_split_across_torchs_openmp_threads():
    """The cpu runtime hands its kernels to torch's OpenMP team. That split once came from the
    header template at::parallel_for, which splits only where its includer is compiled with
    OpenMP, and ran every kernel on the calling thread (a bf16 prompt's attention after its V
    projection at half speed). Every item must run once, on each of the threads asked for."""
    script = textwrap.dedent(
        """
        import torch
        import luminal

        if not any("/libgomp" in line or "/libomp" in line for line in open("/proc/self/maps")):
            print("SKIP torch runs no OpenMP here")
            raise SystemExit(0)
        torch.set_num_threads(2)
        torch.randn(1 << 20).sum()  # a parallel op: the team exists and spins
        print(luminal._C._aten_parallel_for_chunks(37, 2))
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    last = run.stdout.strip().splitlines()[-1]
    if last.startswith("SKIP"):
        pytest.skip(last[5:])
    chunks = sorted(ast.literal_eval(last))
    covered = [i for begin, end, _ in chunks for i in range(begin, end)]
    assert covered == list(range(37)), chunks
    assert {thread for _, _, thread in chunks} == {0, 1}, chunks


@pytest.mark.parametrize("given, expected", [(None, "4"), ("12", "12")])
def test_openblas_workers_sleep_after_each_gemm_unless_the_user_says(given, expected):
    """Importing luminal sets OPENBLAS_THREAD_TIMEOUT before its OpenBLAS loads (which reads it
    once): spinning OpenBLAS workers contended with our pool (docs/lessons.md). A value the user
    set is kept."""
    script = textwrap.dedent(
        """
        import os
        import torch

        def openblas_loaded():
            return any("/libopenblas" in line for line in open("/proc/self/maps"))

        assert not openblas_loaded(), "OpenBLAS must load with luminal, after the variable is set"
        import luminal
        assert openblas_loaded()
        print(os.environ["OPENBLAS_THREAD_TIMEOUT"])
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if given is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = given
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == expected
