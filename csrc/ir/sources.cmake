# The primitive IR: plain C++20.
target_sources(luminal_core PRIVATE
  csrc/ir/bind_symbols.cpp
  csrc/ir/dtype.cpp
  csrc/ir/expr.cpp
  csrc/ir/graph.cpp
  csrc/ir/ops.cpp
  csrc/ir/view.cpp
)
