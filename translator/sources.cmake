# Sources of translator, sorted.
target_sources(luminal_core PRIVATE
  translator/args.cpp
  translator/aten_fallback.cpp
  translator/attention.cpp
  translator/context.cpp
  translator/convolution.cpp
  translator/creation.cpp
  translator/defaults.cpp
  translator/elementwise.cpp
  translator/indexing.cpp
  translator/linalg.cpp
  translator/meta.cpp
  translator/moe.cpp
  translator/movement.cpp
  translator/nn.cpp
  translator/padding.cpp
  translator/pooling.cpp
  translator/reduction.cpp
  translator/registry.cpp
  translator/scatter_reduce.cpp
  translator/sorting.cpp
  translator/spatial.cpp
  translator/sym_expr.cpp
  translator/tensor_ops.cpp
  translator/translate.cpp
  translator/upsample.cpp
)
