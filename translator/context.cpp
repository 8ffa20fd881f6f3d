#include "translator/context.h"

#include "common/error.h"

namespace luminal::translator {

Tensor TranslationContext::add(ir::Node node) {
  node.origin = origin_;
  ir::View view = ir::View::contiguous(node.shape);
  ir::DType dtype = node.dtype;
  ir::NodeId id = graph_.add(std::move(node));
  return Tensor{ir::TensorRef{id, std::move(view)}, dtype};
}

const Tensor& TranslationContext::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  USER_CHECK(it != tensors_.end()) << "tensor '" << name << "' is used before any node defines it";
  return it->second;
}

ir::Expr TranslationContext::sym_int(const std::string& name) const {
  auto it = sym_ints_.find(name);
  USER_CHECK(it != sym_ints_.end()) << "symbolic int '" << name << "' is used before any node defines it";
  return it->second;
}

}  // namespace luminal::translator
