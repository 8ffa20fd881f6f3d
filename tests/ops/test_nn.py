"""Neural-network functions (softmax/log_softmax, layer/group/batch norm, gelu, silu, ...) against
eager in the float dtypes (torch defines them for floats only); f16/bf16 compute in f32 and
round once, as torch's CPU kernels do."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
import torch
import torch.nn.functional as F

import luminal
import luminal.export

from op_harness import FLOATS, TOLERANCE, Case, dtype_name, record_coverage, run_case

V = {
    "3d": (lambda m: m((2, 3, 8)),),
    "transposed": (lambda m: m((2, 8, 3)).transpose(1, 2),),
    "0d": (lambda m: m(()),),
}
V4 = {"4d": (lambda m: m((2, 4, 3, 3)),), "permuted": (lambda m: m((2, 3, 3, 4)).permute(0, 3, 1, 2),)}


def ncase(name, fn, variants=V, **kw):
    return Case(name, fn, dtypes=FLOATS, variants=variants, short=(list(variants)[1],), **kw)


W8 = torch.linspace(-1, 1, 8)
V_ROWS = {k: v for k, v in V.items() if k != "0d"}
TARGETS = torch.tensor([0, 7, 3, -100, 5, 1])
W4 = torch.linspace(0.5, 1.5, 4)
CASES = [
    ncase("softmax", lambda x: torch.softmax(x, -1)),
    ncase("softmax_dim0", lambda x: torch.softmax(x, 0)),
    ncase("log_softmax", lambda x: torch.log_softmax(x, -1)),
    # The gather of a few log-probabilities moves ahead of log_softmax's last op
    # (passes/gather_before_pointwise.h); -100 is cross_entropy's ignored target.
    ncase("cross_entropy", lambda x: F.cross_entropy(x.flatten(0, 1), TARGETS), variants=V_ROWS),
    ncase("cross_entropy_sum", lambda x: F.cross_entropy(x.flatten(0, 1), TARGETS, reduction="sum"), variants=V_ROWS),
    ncase("log_prob_gather", lambda x: torch.log_softmax(x, -1).gather(-1, TARGETS.clamp(min=0).view(2, 3, 1)),
          variants=V_ROWS),
    ncase("gelu", F.gelu),
    ncase("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
    # silu(-inf) is -inf * 0 = NaN in eager; +inf stays inf.
    ncase("silu", F.silu, extra_inputs=[lambda d: (torch.tensor([88.5, -88.5, -100.0, 100.0, float("inf"), float("-inf"), float("nan")], dtype=d),)]),
    ncase("mish", F.mish),
    ncase("softplus", F.softplus),
    ncase("hardswish", F.hardswish),
    ncase("hardsigmoid", F.hardsigmoid),
    ncase("relu6", F.relu6),
    ncase("layer_norm", lambda x: F.layer_norm(x, (8,), W8.to(x.dtype), W8.to(x.dtype) * 2, eps=1e-5),
          variants={k: v for k, v in V.items() if k != "0d"}),
    ncase("layer_norm_no_affine", lambda x: F.layer_norm(x, (3, 8)), variants={k: v for k, v in V.items() if k != "0d"}),
    ncase("group_norm", lambda x: F.group_norm(x, 2, W4.to(x.dtype), W4.to(x.dtype)), variants=V4),
    # Regression (OpInfo): an empty batch has no numel to infer the group size from.
    ncase("group_norm_empty_batch", lambda x: F.group_norm(x[:0], 2), variants=V4),
    ncase("batch_norm_eval", lambda x: F.batch_norm(x, W4.to(x.dtype), W4.to(x.dtype) + 1, W4.to(x.dtype), W4.to(x.dtype) - 1,
                                                    training=False), variants=V4),
    ncase("rms_norm", lambda x: F.rms_norm(x, (8,), W8.to(x.dtype), eps=1e-6), variants={k: v for k, v in V.items() if k != "0d"}),
    # Training mode: the batch's statistics; the running ones (updated in place in eager) come
    # back from the compiled graph as its outputs (_native_batch_norm_legit_functional).
    ncase("batch_norm_train", lambda x: batch_norm_train(x, momentum=0.3), variants=V4),
    ncase("batch_norm_train_3d_input", lambda x: batch_norm_train(x.flatten(2), momentum=0.1), variants=V4),
    ncase("batch_norm_train_no_running_stats",
          lambda x: F.batch_norm(x, None, None, W4.to(x.dtype), None, training=True), variants=V4),
]


def batch_norm_train(x, momentum):
    running_mean, running_var = torch.zeros(4, dtype=x.dtype), torch.ones(4, dtype=x.dtype)
    out = F.batch_norm(x, running_mean, running_var, W4.to(x.dtype), W4.to(x.dtype) + 1, training=True,
                       momentum=momentum)
    return out, running_mean, running_var


@pytest.mark.parametrize("case", CASES, ids=str)
def test_nn(case):
    run_case(case)


def test_gelu_tanh_and_erf_precision():
    """Upstream luminal approximated erf (error ~1.5e-7) inside gelu; both gelu forms must match
    eager to f32 rounding over the range where they bend."""
    x = torch.linspace(-6, 6, 2001)
    run_case(Case("gelu_precision", lambda x: (F.gelu(x), F.gelu(x, approximate="tanh")), dtypes=(torch.float32,),
                  variants={}, extra_inputs=[lambda d: (x.to(d),)], tolerance_scale=0.1))


def test_bf16_paths():
    """bf16 softmax/layer_norm/gelu/silu: computed in f32 and rounded once (upstream cast the
    whole graph to f32 and drifted)."""
    x = torch.randn(4, 64) * 4
    run_case(Case("bf16_paths", lambda x: (torch.softmax(x, -1), F.layer_norm(x, (64,)), F.gelu(x), F.silu(x), torch.rsqrt(x.abs() + 1)),
                  dtypes=(torch.bfloat16,), variants={}, extra_inputs=[lambda d: (x.to(d),)]))


def without_functionalisation(archive: bytes) -> bytes:
    """The archive of a training BatchNorm as a program that was not functionalised would be:
    aten::_native_batch_norm_legit.default updating running_mean and running_var in place, where
    export writes the functional op and returns the new statistics as buffer mutations."""
    source = zipfile.ZipFile(io.BytesIO(archive))
    edited = io.BytesIO()
    with zipfile.ZipFile(edited, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name.endswith("models/model.json"):
                program = json.loads(data)
                graph, signature = program["graph_module"]["graph"], program["graph_module"]["signature"]
                (node,) = [n for n in graph["nodes"] if "_native_batch_norm_legit_functional" in n["target"]]
                node["target"] = "torch.ops.aten._native_batch_norm_legit.default"
                dropped = {o["as_tensor"]["name"] for o in node["outputs"][3:]}
                node["outputs"] = node["outputs"][:3]
                # What only carried the new statistics to the buffers (bf16's _to_copy) goes too.
                kept_nodes = []
                for n in graph["nodes"]:
                    if any(a["arg"].get("as_tensor", {}).get("name") in dropped for a in n["inputs"]):
                        dropped |= {o["as_tensor"]["name"] for o in n["outputs"]}
                    else:
                        kept_nodes.append(n)
                graph["nodes"] = kept_nodes
                graph["outputs"] = [o for o in graph["outputs"] if o["as_tensor"]["name"] not in dropped]
                signature["output_specs"] = [
                    s for s in signature["output_specs"]
                    if s.get("buffer_mutation", {}).get("arg", {}).get("name") not in dropped
                ]
                data = json.dumps(program).encode()
            target.writestr(name, data)
    return edited.getvalue()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_name)
def test_batch_norm_updating_its_arguments_in_place(dtype):
    torch.manual_seed(0)
    model, reference = (torch.nn.BatchNorm2d(3).train().to(dtype) for _ in range(2))
    x = torch.randn(4, 3, 5, 5, dtype=dtype)
    program = torch.export.export(model, (x,)).run_decompositions()
    archive = without_functionalisation(luminal.export.serialize(program, set()))
    weights = dict(model.named_parameters()) | dict(model.named_buffers())
    factory = luminal._C.cpu_factory_capsule()
    compiled = luminal._C.compile_pt2(archive, factory, {"fallback": "error"}, weights)
    pointers = [model.running_mean.data_ptr(), model.running_var.data_ptr()]
    tolerance = TOLERANCE[dtype]
    with torch.no_grad():
        for step in range(3):
            (out,) = compiled.run([x + step])
            torch.testing.assert_close(out, reference(x + step), rtol=tolerance, atol=tolerance)
            statistics = ((model.running_mean, reference.running_mean), (model.running_var, reference.running_var))
            for ours, eager in statistics:
                torch.testing.assert_close(ours, eager, rtol=tolerance, atol=tolerance)
            assert model.num_batches_tracked.item() == step + 1
    assert [model.running_mean.data_ptr(), model.running_var.data_ptr()] == pointers
    kinds = [kind for kind, _, _ in compiled.output_specs]
    assert kinds.count("weight_mutation") == 3  # num_batches_tracked, and the two statistics updated in place
    record_coverage(archive, dtype)


def test_cross_entropy_never_writes_the_log_probabilities(tmp_path):
    """A cross entropy's gather of one log-probability a row moves ahead of log_softmax's last
    Sub (passes/gather_before_pointwise.h): only the shifted logits and their exps are [rows,
    classes] nodes, and those the row kernel keeps in registers; an out-of-range target still
    raises, naming the gather."""
    x, target = torch.randn(32, 1000), torch.randint(0, 1000, (32,))
    compiled = torch.compile(F.cross_entropy, backend="luminal", options={"debug_dir": str(tmp_path)})
    torch.testing.assert_close(compiled(x, target), F.cross_entropy(x, target))
    ir_text = next(tmp_path.glob("*_legalize_matmul.txt")).read_text()
    full = [line for line in ir_text.splitlines() if "f32 [32, 1000] (" in line.split(";")[0]]
    assert [line.split()[2] for line in full] == ["Sub", "Exp"], full
    with pytest.raises(luminal.UserError, match="gather"):
        compiled(x, torch.full((32,), 1000))
