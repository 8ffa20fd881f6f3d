"""CPU inputs that a GPU graph copies to the GPU itself are lifted out of the graph and copied by
each call (python/luminal/input_device_moves.py). The first GPU run found a StaticCache compiled
before any eager step moving its CPU `cumulative_length` to CUDA inside the graph, which luminal
refused. The rewrite is checked here on FX graphs built by hand (this machine's torch cannot make
CUDA tensors, even fake ones); tests/cuda runs the decode end to end on a GPU."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx
from conftest import static_cache_greedy_tokens
from luminal.compiled_model import BoundProgram, CompiledModel
from luminal.input_device_moves import lift_input_device_moves, move_inputs

CUDA = torch.device("cuda", 0)


def graph_with(move, extra_use: bool = False) -> torch.fx.GraphModule:
    """forward(n, x): m = move(n); return (x + m, m); with `extra_use`, also n + 1."""
    graph = torch.fx.Graph()
    n = graph.placeholder("n")
    n.meta["example_value"] = torch.tensor(3)
    x = graph.placeholder("x")
    x.meta["example_value"] = torch.zeros(2)
    m = move(graph, n)
    outputs = [graph.call_function(operator.add, (x, m)), m]
    if extra_use:
        outputs.append(graph.call_function(operator.add, (n, 1)))
    graph.output(tuple(outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


MOVES = {
    "to_device": lambda g, n: g.call_method("to", (n, CUDA)),
    "to_string": lambda g, n: g.call_method("to", (n, "cuda:0")),
    "to_device_keyword": lambda g, n: g.call_method("to", (n,), {"device": CUDA}),
    "to_non_blocking": lambda g, n: g.call_method("to", (n, CUDA), {"non_blocking": True}),
    "cuda": lambda g, n: g.call_method("cuda", (n,)),
}


@pytest.mark.parametrize("form", MOVES)
def test_a_cpu_input_the_graph_moves_to_cuda_is_lifted(form):
    gm = graph_with(MOVES[form])
    moves = lift_input_device_moves(gm)
    assert moves == {0: torch.device("cuda", 0) if form != "cuda" else torch.device("cuda")}
    assert not [node for node in gm.graph.nodes if node.op == "call_method"]
    placeholder = next(iter(gm.graph.nodes))
    # Both readers of the move now read the placeholder, which stands for the moved tensor.
    (add, returned) = next(node for node in gm.graph.nodes if node.op == "output").args[0][:2]
    assert add.args == (gm.graph.find_nodes(op="placeholder")[1], placeholder)
    assert returned is placeholder


NOT_LIFTED = {
    "a_dtype_change": lambda g, n: g.call_method("to", (n, torch.float16)),
    "device_and_dtype": lambda g, n: g.call_method("to", (n, CUDA, torch.float16)),
    "to_the_cpu": lambda g, n: g.call_method("to", (n, torch.device("cpu"))),
    "another_method": lambda g, n: g.call_method("float", (n,)),
}


@pytest.mark.parametrize("form", NOT_LIFTED)
def test_other_conversions_stay_in_the_graph(form):
    gm = graph_with(NOT_LIFTED[form])
    assert lift_input_device_moves(gm) == {}
    assert [node for node in gm.graph.nodes if node.op == "call_method"]


def test_an_input_also_read_on_the_cpu_stays_in_the_graph():
    # Moving it for every reader would put its CPU readers on the GPU: the translator names the move.
    gm = graph_with(MOVES["to_device"], extra_use=True)
    assert lift_input_device_moves(gm) == {}


def test_an_input_moved_to_two_devices_stays_in_the_graph():
    graph = torch.fx.Graph()
    n = graph.placeholder("n")
    n.meta["example_value"] = torch.tensor(3)
    a = graph.call_method("to", (n, torch.device("cuda", 0)))
    b = graph.call_method("to", (n, torch.device("cuda", 1)))
    graph.output((a, b))
    assert lift_input_device_moves(torch.fx.GraphModule(torch.nn.Module(), graph)) == {}


def test_each_call_copies_the_lifted_arguments_before_compiling_and_running():
    # The meta device stands in for the GPU: the copy is what matters, not where it goes.
    seen = []

    class Program:
        stats: dict = {}

        def run(self, inputs):
            seen.append([t.device.type for t in inputs])
            return []

    def compile_fn(args):
        seen.append([t.device.type for t in args])
        return BoundProgram(Program(), user_input_positions=[0, 1], weight_positions={}, weights={})

    model = CompiledModel(compile_fn, {1: torch.device("meta")})
    model(torch.zeros(2), torch.tensor(3))
    model(torch.zeros(2), torch.tensor(4))
    assert seen == [["cpu", "meta"], ["cpu", "meta"], ["cpu", "meta"]]


def test_move_inputs_leaves_other_arguments_as_they_are():
    x, n = torch.zeros(2), torch.tensor(3)
    moved = move_inputs((x, n, 5), {1: torch.device("meta")})
    assert moved[0] is x and moved[2] == 5 and moved[1].device.type == "meta"


def test_a_static_cache_compiled_before_any_eager_step_decodes_eagers_tokens(monkeypatch):
    # The GPU flow run on the CPU: with "cpu" lifted too, each layer's `cumulative_length.to(device)`
    # leaves the graph, and the placeholder stands where the copy was: read for the cache
    # positions, mutated in place (add_) and returned for dynamo to assign back to the layer.
    import luminal
    from luminal import backend, input_device_moves
    from transformers import LlamaConfig, LlamaForCausalLM

    monkeypatch.setattr(input_device_moves, "LIFTED_DEVICE_TYPES", {"cuda", "cpu"})
    lifted = []

    def recording_lift(gm):
        moves = input_device_moves.lift_input_device_moves(gm)
        lifted.append(len(moves))
        return moves

    monkeypatch.setattr(backend, "lift_input_device_moves", recording_lift)
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    prompt = torch.randint(0, 256, (1, 7))

    with torch.no_grad():
        expected = static_cache_greedy_tokens(model, config, prompt, steps=6, max_cache_len=32)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=luminal.luminal_backend)
        assert static_cache_greedy_tokens(compiled, config, prompt, steps=6, max_cache_len=32) == expected
    assert lifted and lifted[0] == config.num_hidden_layers, lifted
