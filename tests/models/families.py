"""Small random-weight configs of the HF model families the model suite runs (no downloads):
hidden 64, 2 layers, vocab 256, so the reference runtime runs a decode step in milliseconds."""

from __future__ import annotations

from typing import Callable

import torch
import transformers

VOCAB = 256
MAX_CACHE_LEN = 48

_COMMON = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=VOCAB,
    max_position_embeddings=128,
)


def llama() -> transformers.PreTrainedModel:
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**_COMMON))


def qwen2() -> transformers.PreTrainedModel:
    """Biases on q, k and v (Qwen2 and Qwen2.5): a decode step's GEMVs add them in their stores."""
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**_COMMON))


def qwen3() -> transformers.PreTrainedModel:
    return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**_COMMON, head_dim=16))


def gemma3() -> transformers.PreTrainedModel:
    # Alternating sliding/full layers: the masks are merged with `|` on bools; gelu tanh MLP.
    config = transformers.Gemma3TextConfig(
        **_COMMON, head_dim=16, sliding_window=8, layer_types=["sliding_attention", "full_attention"]
    )
    return transformers.Gemma3ForCausalLM(config)


def mistral() -> transformers.PreTrainedModel:
    return transformers.MistralForCausalLM(transformers.MistralConfig(**_COMMON, sliding_window=None))


def mistral_sliding() -> transformers.PreTrainedModel:
    """Mistral's default sliding window (4096): longer than the cache, so every cache layer is a
    StaticSlidingWindowLayer that branches on a Python-int length."""
    return transformers.MistralForCausalLM(transformers.MistralConfig(**_COMMON))


def phi3() -> transformers.PreTrainedModel:
    return transformers.Phi3ForCausalLM(transformers.Phi3Config(**_COMMON, pad_token_id=0))


def gpt2() -> transformers.PreTrainedModel:
    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128)
    return transformers.GPT2LMHeadModel(config)


def qwen3_moe() -> transformers.PreTrainedModel:
    config = transformers.Qwen3MoeConfig(
        **_COMMON, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, decoder_sparse_step=1
    )
    return transformers.Qwen3MoeForCausalLM(config)


def mixtral() -> transformers.PreTrainedModel:
    config = transformers.MixtralConfig(**_COMMON, num_local_experts=4, num_experts_per_tok=2, sliding_window=None)
    return transformers.MixtralForCausalLM(config)


def bert() -> transformers.PreTrainedModel:
    config = transformers.BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=VOCAB
    )
    return transformers.BertModel(config, add_pooling_layer=False)


DECODERS: dict[str, Callable[[], transformers.PreTrainedModel]] = {
    "llama": llama,
    "qwen2": qwen2,
    "qwen3": qwen3,
    "gemma3": gemma3,
    "mistral": mistral,
    "phi3": phi3,
    "gpt2": gpt2,
}
MOE: dict[str, Callable[[], transformers.PreTrainedModel]] = {"qwen3_moe": qwen3_moe, "mixtral": mixtral}


def build(factory: Callable[[], transformers.PreTrainedModel], dtype: torch.dtype, seed: int = 0):
    torch.manual_seed(seed)
    return factory().to(dtype).eval()
