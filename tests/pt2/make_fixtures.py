"""Regenerates the PT2 fixtures the C++ reader tests read (tests/pt2/fixtures/).

Each program goes through the path users take: torch.export.export(...).run_decompositions()
then torch.export.save. Weights come from fixed seeds, and expected_facts.json records what the
C++ tests compare against (first weight values, payload sizes), so the tests check real bytes.

Run: python tests/pt2/make_fixtures.py   (torch 2.13 CPU, transformers)
"""

import json
import operator
import zipfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

FIXTURES = Path(__file__).resolve().parent / "fixtures"


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SigDemo(nn.Module):
    """Exercises every graph-signature kind plus argument encodings a reader must survive."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))
        self.register_buffer("running", torch.zeros(8))
        self.register_buffer("scratch", torch.ones(8), persistent=False)
        # A plain tensor attribute: export lifts it as a tensor constant.
        self.const = torch.arange(8, dtype=torch.float32)

    def forward(self, x, y):
        h = x @ self.w + self.scratch + self.const
        self.running.add_(h.mean(0))
        y.mul_(2.0)
        h = F.layer_norm(h, (8,))
        h = h.clamp(min=-1.0)
        h = torch.maximum(h, torch.scalar_tensor(float("-inf")))
        return h.sum(), h[:, 1:] + y[:, 1:]


def export_and_save(name, module, args, dynamic_shapes=None):
    module.eval()
    with torch.no_grad():
        program = torch.export.export(module, args, dynamic_shapes=dynamic_shapes).run_decompositions()
    path = FIXTURES / f"{name}.pt2"
    torch.export.save(program, str(path))
    return path, program


def program_facts(program):
    """What Python sees, for the C++ reader to agree with (getitem nodes are not serialized)."""
    calls = [n for n in program.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    return {
        "node_count": len(calls),
        "first_target": str(calls[0].target),
        "input_spec_kinds": [spec.kind.name for spec in program.graph_signature.input_specs],
        "output_spec_kinds": [spec.kind.name for spec in program.graph_signature.output_specs],
    }


def first_values(tensor, count=4):
    return [float(v) for v in tensor.detach().flatten()[:count]]


def make_mlp(facts):
    torch.manual_seed(0)
    mlp = Mlp()
    path, program = export_and_save("mlp", mlp, (torch.randn(4, 16),))
    facts["mlp"] = program_facts(program) | {
        "fc1.weight": first_values(mlp.fc1.weight),
        "fc2.bias": first_values(mlp.fc2.bias),
    }
    rezip_deflated(path, FIXTURES / "mlp_deflate.pt2")


def rezip_deflated(source, destination):
    """torch writes STORED zips; a user's tooling may recompress, and the reader must cope."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename.replace("mlp/", "mlp_deflate/", 1), src.read(info))


def make_sigdemo(facts):
    torch.manual_seed(1)
    module = SigDemo()
    _, program = export_and_save("sigdemo", module, (torch.randn(4, 8), torch.randn(4, 8)))
    facts["sigdemo"] = program_facts(program) | {
        "w": first_values(module.w),
        "const": first_values(module.const),
        "scratch": first_values(module.scratch),
    }


def make_dyn_mlp(facts):
    torch.manual_seed(2)
    mlp = Mlp()
    batch = torch.export.Dim("batch", min=2, max=1024)
    _, program = export_and_save("dyn_mlp", mlp, (torch.randn(4, 16),), dynamic_shapes=({0: batch},))
    facts["dyn_mlp"] = program_facts(program) | {"fc1.weight": first_values(mlp.fc1.weight)}


class LlamaLogits(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def make_llama(facts):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=128,
        use_cache=False,
        attn_implementation="sdpa",
    )
    model = LlamaForCausalLM(config)
    _, program = export_and_save("llama", LlamaLogits(model), (torch.tensor([[1, 5, 9, 3]]),))
    facts["llama"] = program_facts(program) | {"model.model.embed_tokens.weight": first_values(model.model.embed_tokens.weight)}


def main():
    FIXTURES.mkdir(parents=True, exist_ok=True)
    facts = {"torch_version": torch.__version__}
    make_mlp(facts)
    make_sigdemo(facts)
    make_dyn_mlp(facts)
    make_llama(facts)
    (FIXTURES / "expected_facts.json").write_text(json.dumps(facts, indent=1) + "\n")


if __name__ == "__main__":
    main()
