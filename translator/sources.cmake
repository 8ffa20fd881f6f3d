# Sources of translator, sorted.
target_sources(luminal_core PRIVATE
  translator/args.cpp
  translator/aten_fallback.cpp
  translator/attention.cpp
  translator/context.cpp
  translator/creation.cpp
  translator/defaults.cpp
  translator/elementwise.cpp
  translator/indexing.cpp
  translator/linalg.cpp
  translator/meta.cpp
  translator/moe.cpp
  translator/movement.cpp
  translator/nn.cpp
  translator/reduction.cpp
  translator/registry.cpp
  translator/sorting.cpp
  translator/sym_expr.cpp
  translator/tensor_ops.cpp
  translator/translate.cpp
)
