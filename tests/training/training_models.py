"""The model families tests/training trains: small random-weight configs with a batch and a
loss each. Dropout is off (its masks are random; test_dropout.py covers it), so gradients and
loss curves can be compared with eager's value for value."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))
import families

VOCAB = families.VOCAB


@dataclass
class TrainingFamily:
    build: Callable[[], torch.nn.Module]
    batch: Callable[[torch.Generator], dict[str, torch.Tensor]]
    loss: Callable[[Any, dict[str, torch.Tensor]], torch.Tensor]


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = (
            torch.nn.Linear(12, 24),
            torch.nn.Linear(24, 24),
            torch.nn.Linear(24, 3),
        )

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(F.gelu(self.fc1(x)))))


class CNN(torch.nn.Module):
    """Convolutions with batch norm in train mode (running statistics updated in place), pooling
    and a linear head. The convolutions before a batch norm have no bias, as in ResNets: a bias
    there has a gradient of exactly zero, which AdamW would turn into noise-driven steps."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def gpt2() -> torch.nn.Module:
    config = transformers.GPT2Config(
        n_embd=64,
        n_layer=2,
        n_head=4,
        vocab_size=VOCAB,
        n_positions=128,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    return transformers.GPT2LMHeadModel(config)


def bert() -> torch.nn.Module:
    config = transformers.BertConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        vocab_size=VOCAB,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return transformers.BertForMaskedLM(config)


def _tokens(batch: int, length: int) -> Callable[[torch.Generator], dict[str, torch.Tensor]]:
    return lambda gen: {"input_ids": torch.randint(0, VOCAB, (batch, length), generator=gen)}


def _next_token_loss(output: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    logits = output.logits[:, :-1].float()
    return F.cross_entropy(logits.flatten(0, 1), batch["input_ids"][:, 1:].flatten())


def _masked_lm_loss(output: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.cross_entropy(output.logits.float().flatten(0, 1), batch["input_ids"].flatten())


def _regression_loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.mse_loss(output.float(), batch["target"])


def _classification_loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.cross_entropy(output.float(), batch["label"])


FAMILIES: dict[str, TrainingFamily] = {
    "mlp": TrainingFamily(
        MLP,
        lambda gen: {"x": torch.randn(8, 12, generator=gen), "target": torch.randn(8, 3, generator=gen)},
        _regression_loss,
    ),
    "cnn": TrainingFamily(
        CNN,
        lambda gen: {
            "x": torch.randn(4, 3, 16, 16, generator=gen),
            "label": torch.randint(0, 10, (4,), generator=gen),
        },
        _classification_loss,
    ),
    "gpt2": TrainingFamily(gpt2, _tokens(2, 16), _next_token_loss),
    "llama": TrainingFamily(families.llama, _tokens(2, 16), _next_token_loss),
    "bert": TrainingFamily(bert, _tokens(2, 16), _masked_lm_loss),
    "qwen3_moe": TrainingFamily(families.qwen3_moe, _tokens(2, 16), _next_token_loss),
}


def model_inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """What the model is called with: everything but the loss's targets."""
    return {k: v for k, v in batch.items() if k not in ("target", "label")}


def call(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> Any:
    inputs = model_inputs(batch)
    return model(inputs["x"]) if "x" in inputs else model(**inputs)
