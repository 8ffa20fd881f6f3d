"""Named model configs from configs.toml, and the seeded model each one builds."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

CONFIGS_FILE = Path(__file__).with_name("configs.toml")

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

# arch -> (config class, model class), imported lazily so loading the TOML stays cheap.
ARCHS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM"),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM"),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel"),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM"),
    "mistral": ("MistralConfig", "MistralForCausalLM"),
    "phi3": ("Phi3Config", "Phi3ForCausalLM"),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM"),
    "bert": ("BertConfig", "BertForMaskedLM"),
}
# Encoders have no KV cache and no decode: their bench is one forward of the prompt per iteration.
ENCODER_ARCHS = {"bert"}
# torchao configs a model's Linears are quantized with (docs/quantization.md), made lazily:
# torchao is imported only by a quantized config.
QUANTIZATIONS = ("int8", "int4", "int8dyn")


def quantization_config(name: str) -> Any:
    from torchao.quantization import (
        Int8DynamicActivationInt8WeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
    )
    from torchao.quantization.granularity import PerGroup

    return {
        "int8": Int8WeightOnlyConfig,
        "int4": lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)),
        "int8dyn": Int8DynamicActivationInt8WeightConfig,
    }[name]()


class ConfigError(ValueError):
    """A bad config name or a malformed configs file."""


@dataclass(frozen=True)
class BenchConfig:
    name: str
    arch: str
    dtype: str
    hf: dict[str, Any]
    seed: int
    max_cache_len: int
    decode_tokens: int
    iters: int
    warmups: int
    attn_implementation: str
    # False: the compiled paths pass dynamic=False (one static graph per shape). True: torch.compile's
    # default, dynamic=None, for models whose cache branches on a Python int that changes every step
    # (sliding-window caches): static graphs would recompile per step until dynamo gives up and
    # runs eager.
    automatic_dynamic: bool = False
    prompt_ids: list[int] = field(default_factory=list)
    # "" or one of QUANTIZATIONS: every nn.Linear quantized with torchao after the dtype cast.
    quantization: str = ""
    # False: the cache is filled by the batched prefill and decode goes on from there; the
    # one-token-at-a-time prefill (TTFT, sequential) is skipped. For long prompts, where it would
    # take minutes per iteration.
    sequential_prefill: bool = True
    # luminal options the luminal path adds to its own (docs/options.md), e.g. pack_int4_weights;
    # the other paths ignore them.
    luminal_options: dict[str, Any] = field(default_factory=dict)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def is_encoder(self) -> bool:
        return self.arch in ENCODER_ARCHS


def load_configs(path: Path = CONFIGS_FILE) -> dict[str, BenchConfig]:
    """All configs in the file, keyed by their expanded name (`<key>-<dtype>` or `<key>`)."""
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    defaults = raw.get("defaults", {})
    configs: dict[str, BenchConfig] = {}
    tables = raw.get("configs", {})
    for key in tables:
        settings = {**defaults, **_resolve_base(key, tables, ())}
        if settings.get("arch") not in ARCHS:
            raise ConfigError(f"config {key!r}: arch must be one of {sorted(ARCHS)}, got {settings.get('arch')!r}")
        if "dtypes" in settings:
            variants = [(f"{key}-{d}", d) for d in settings.pop("dtypes")]
        else:
            variants = [(key, settings.pop("dtype", "f32"))]
        for name, dtype in variants:
            if dtype not in DTYPES:
                raise ConfigError(f"config {name!r}: dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
            config = BenchConfig(name=name, dtype=dtype, **_with_prompt_len(name, settings))
            _check(config)
            configs[name] = config
    return configs


def _with_prompt_len(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """`prompt_len = N` makes the prompt prompt_ids repeated to N tokens (a long context without a
    thousand ids in the file)."""
    settings = dict(settings)
    length = settings.pop("prompt_len", 0)
    if length:
        ids = settings.get("prompt_ids") or []
        if not ids or length < 0:
            raise ConfigError(f"config {name!r}: prompt_len needs prompt_ids to repeat and a positive length")
        settings["prompt_ids"] = (ids * (length // len(ids) + 1))[:length]
    return settings


def _resolve_base(key: str, tables: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    """Table `key` over the table its `base` names (resolved the same way): another config's model
    with this table's settings. A dtype or dtypes here replaces the base's both."""
    table = tables[key]
    if "base" not in table:
        return table
    name = table["base"]
    if name not in tables or name in seen + (key,):
        raise ConfigError(f"config {key!r}: base {name!r} is not a config, or its bases lead back to {key!r}")
    base = dict(_resolve_base(name, tables, seen + (key,)))
    if "dtype" in table or "dtypes" in table:
        base.pop("dtype", None)
        base.pop("dtypes", None)
    return {**base, **{k: v for k, v in table.items() if k != "base"}}


def _check(config: BenchConfig) -> None:
    if config.quantization and config.quantization not in QUANTIZATIONS:
        raise ConfigError(f"config {config.name!r}: quantization must be one of {QUANTIZATIONS}, got {config.quantization!r}")
    vocab = config.hf.get("vocab_size", 0)
    if not config.prompt_ids or max(config.prompt_ids) >= vocab:
        raise ConfigError(f"config {config.name!r}: prompt_ids must be non-empty and below vocab_size {vocab}")
    if len(config.prompt_ids) + config.decode_tokens > config.max_cache_len:
        raise ConfigError(f"config {config.name!r}: prompt + decode tokens exceed max_cache_len")


def select(names: list[str], configs: dict[str, BenchConfig]) -> list[BenchConfig]:
    """The configs named, in order; an unknown name is an error that lists the valid ones."""
    unknown = [n for n in names if n not in configs]
    if unknown:
        raise ConfigError(f"unknown config(s) {', '.join(unknown)}; valid configs: {', '.join(configs)}")
    return [configs[n] for n in names]


def build_model(config: BenchConfig) -> torch.nn.Module:
    """The config's model with random weights from its seed: the same bits in every process."""
    import transformers

    config_cls, model_cls = (getattr(transformers, n) for n in ARCHS[config.arch])
    hf_config = config_cls(**config.hf, attn_implementation=config.attn_implementation)
    torch.manual_seed(config.seed)
    # Built in f32 then cast, so the bf16 and f16 variants hold the f32 variant's weights rounded.
    model = model_cls(hf_config).eval().to(config.torch_dtype)
    if config.quantization:
        from torchao.quantization import quantize_

        quantize_(model, quantization_config(config.quantization))
    return model
