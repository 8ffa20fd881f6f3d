"""torch.compile(DistributedDataParallel(model), backend="luminal") with 2 processes (gloo on
127.0.0.1): dynamo splits the graph at DDP's bucket boundaries (DDPOptimizer), each piece
compiles through luminal's training path, and after backward() every rank holds the gradients
of one eager process on the whole batch. Bounded in time; the processes are always reaped."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from ranks import run_ranks

WORLD = 2
TIMEOUT_S = 240

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(), reason="needs torch.distributed with gloo"
)


class Net(torch.nn.Module):
    """Four 1 MiB layers: with 1 MiB buckets DDP makes several, and dynamo one graph each.
    A user-defined module: dynamo starts tracing at a torch.nn container's forward only when
    inlined from a user frame."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(16, 512),
            torch.nn.GELU(),
            torch.nn.Linear(512, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 4),
        )

    def forward(self, x):
        return self.layers(x)


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return torch.randn(8, 16, generator=gen), torch.randn(8, 4, generator=gen)


def _worker(rank: int, world: int) -> tuple[int, list[str], list[str], list]:
    import luminal

    torch.manual_seed(0)
    model = Net()
    compiled_graphs = []

    def backend(gm, example_inputs, **kwargs):
        compiled_graphs.append(luminal.luminal_backend(gm, example_inputs, **kwargs))
        return compiled_graphs[-1]

    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1)
    compiled = torch.compile(ddp, backend=backend)
    x, y = _data()
    shard = slice(rank * 8 // world, (rank + 1) * 8 // world)
    torch.nn.functional.mse_loss(compiled(x[shard]), y[shard]).backward()
    kinds = sorted({type(c).__name__ for c in compiled_graphs})
    fallbacks = sorted({op for c in compiled_graphs for op in c.stats["fallback_ops"]})
    grads = [p.grad.tolist() for p in model.parameters()]  # plain data crosses processes safely
    return len(compiled_graphs), kinds, fallbacks, grads


def test_ddp_gradients_equal_one_eager_process_on_the_whole_batch():
    reports = run_ranks(_worker, world_size=WORLD, timeout_s=TIMEOUT_S)

    torch.manual_seed(0)
    reference = Net()
    x, y = _data()
    torch.nn.functional.mse_loss(reference(x), y).backward()
    for rank, (graph_count, kinds, fallbacks, grads) in enumerate(reports):
        assert graph_count >= 2, f"rank {rank}: {graph_count} graph(s); DDP's buckets should split it"
        assert kinds == ["TrainingModel"]
        assert fallbacks == []
        for grad, p in zip(grads, reference.parameters()):
            torch.testing.assert_close(torch.tensor(grad), p.grad, rtol=1e-5, atol=1e-6)
