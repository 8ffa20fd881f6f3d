// State shared by the op handlers while one program is translated: the IR graph under
// construction and the table from program value names to IR tensors and symbolic ints.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "pt2/schema.h"

namespace luminal::translator {

// A program tensor during translation: an IR node's output read through a view.
struct Tensor {
  ir::TensorRef ref;
  ir::DType dtype = ir::DType::F32;
  const ir::Shape& shape() const { return ref.view.shape(); }
  int rank() const { return static_cast<int>(ref.view.rank()); }
};

class TranslationContext {
 public:
  explicit TranslationContext(const pt2::ExportedProgram& program) : program_(program) {}

  ir::Graph& graph() { return graph_; }
  const pt2::ExportedProgram& program() const { return program_; }

  // The aten node being translated, stamped on every IR node as its origin.
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  const std::string& origin() const { return origin_; }
  // Adds a node whose output is read contiguously; returns it as a Tensor.
  Tensor add(ir::Node node);

  const Tensor& tensor(const std::string& name) const;  // UserError for an unknown name
  bool has_tensor(const std::string& name) const { return tensors_.count(name) != 0; }
  void bind_tensor(const std::string& name, Tensor tensor) { tensors_[name] = std::move(tensor); }

  ir::Expr sym_int(const std::string& name) const;  // UserError for an unknown name
  void bind_sym_int(const std::string& name, ir::Expr value) { sym_ints_[name] = std::move(value); }

  ir::Graph take_graph() { return std::move(graph_); }

 private:
  const pt2::ExportedProgram& program_;
  ir::Graph graph_;
  std::string origin_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, ir::Expr> sym_ints_;
};

}  // namespace luminal::translator
