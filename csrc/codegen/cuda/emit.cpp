#include "codegen/cuda/emit.h"

#include <set>
#include <sstream>

#include "codegen/cpp/emit.h"
#include "codegen/cuda/op_table.h"
#include "codegen/cuda/prelude.h"
#include "common/error.h"

namespace luminal::codegen::cuda {

namespace {

using cpp::expr_text;
using cpp::symbol_var;
using ir::DType;
using ir::Expr;
using ir::is_half;

constexpr int kBlockThreads = 256;

// Whether identifier `name` occurs in `text` as a whole identifier.
bool mentions(const std::string& text, const std::string& name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const bool starts = at == 0 || !ident(text[at - 1]);
    const bool ends = at + name.size() == text.size() || !ident(text[at + name.size()]);
    if (starts && ends) return true;
  }
  return false;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
}

// Declares prefix<d> for the dims of `shape` listed in `dims` (outermost first) from the linear
// index `linear`, row-major over those dims. Only the variables `body` uses are declared (NVRTC
// warns about unused ones, and the tests treat warnings as errors).
std::string decompose(const ir::Shape& shape, const std::vector<int>& dims, const std::string& linear,
                      const std::string& prefix, const std::string& body, const std::string& indent) {
  int outermost_used = -1;
  for (int j = 0; j < static_cast<int>(dims.size()); ++j)
    if (mentions(body, prefix + std::to_string(dims[j]))) {
      outermost_used = j;
      break;
    }
  if (outermost_used < 0) return "";
  std::string out = indent + "int64_t lm_r = " + linear + ";\n";
  for (int j = static_cast<int>(dims.size()) - 1; j >= outermost_used; --j) {
    const std::string var = prefix + std::to_string(dims[j]);
    const std::string extent = expr_text(shape[dims[j]]);
    const bool used = mentions(body, var);
    if (j == outermost_used) {
      out += indent + "const int64_t " + var + " = lm_r;\n";
    } else if (is_one(shape[dims[j]])) {
      if (used) out += indent + "const int64_t " + var + " = 0;\n";
    } else {
      if (used) out += indent + "const int64_t " + var + " = lm_r % " + extent + ";\n";
      out += indent + "lm_r /= " + extent + ";\n";
    }
  }
  return out;
}

class Emitter {
 public:
  explicit Emitter(const Kernel& k) : k_(k), table_(cuda_op_table()) {
    rank_ = static_cast<int>(k.domain.size());
    row_ = k.kind == KernelKind::Loop && k.reduce_axis >= 0;
    inner_ = row_ ? k.reduce_axis : rank_ - 1;
    per_row_ = cpp::per_row_values(k, row_);
  }

  CudaKernelSource emit(const std::string& name) {
    CudaKernelSource result;
    result.name = name;
    result.symbols = k_.symbols();
    for (const Param& p : k_.params) result.uses_halves |= is_half(p.dtype);
    for (const Value& v : k_.values) result.uses_halves |= is_half(v.dtype);
    for (const Reduction& r : k_.reductions) result.uses_halves |= is_half(r.dtype);

    std::string body;
    LaunchSpec& launch = result.launch;
    launch.block_threads = kBlockThreads;
    switch (k_.kind) {
      case KernelKind::Scatter:
        launch.kind = LaunchSpec::Kind::Single;
        launch.work = Expr(int64_t{1});
        body = scatter_body();
        break;
      case KernelKind::Attention:
        INTERNAL_ERROR() << "the CUDA plan does not group attention (PassContext::attention_kernels)";
        break;
      case KernelKind::Scan:
        // One thread per row: the elementwise launch with the rows as its work.
        launch.kind = LaunchSpec::Kind::Elementwise;
        launch.work = k_.parallel_extent();
        body = scan_body();
        break;
      case KernelKind::Gemv:
        launch.kind = LaunchSpec::Kind::Warp;
        launch.work = ir::numel(k_.domain);
        body = gemv_body();
        break;
      case KernelKind::Loop:
        if (row_) {
          launch.kind = LaunchSpec::Kind::Row;
          launch.work = k_.parallel_extent();
          body = row_body();
        } else {
          launch.kind = LaunchSpec::Kind::Elementwise;
          launch.work = ir::numel(k_.domain);
          body = pointwise_body();
        }
        break;
    }

    std::ostringstream out;
    out << prelude(result.uses_halves) << "\n";
    out << "// " << (k_.label.empty() ? "kernel" : k_.label) << " (" << launch_kind_name(launch.kind) << ")\n";
    out << "extern \"C\" __global__ void __launch_bounds__(" << kBlockThreads << ") " << name << "(";
    // A scatter may update its data buffer in place (out aliases data): no __restrict__ there.
    const char* restrict_ = k_.kind == KernelKind::Scatter ? "" : " __restrict__";
    for (size_t i = 0; i < k_.params.size(); ++i) {
      const Param& p = k_.params[i];
      out << (i ? ", " : "") << (p.is_output ? "" : "const ") << table_.storage_type(p.dtype) << "*" << restrict_ << " p"
          << i;
    }
    for (const std::string& s : result.symbols) out << ", const int64_t " << symbol_var(s);
    out << ", int64_t* lm_info) {\n";
    out << "  int64_t lm_status = 0;\n";
    out << body;
    out << "  if (lm_status != 0) lm_report(lm_info, lm_status, 0, 0);\n}\n";
    result.source = out.str();
    return result;
  }

 private:
  bool index_per_row(const Index& index) const { return cpp::index_per_row(k_, index); }

  // ---- text pieces ----
  std::string index_text(const Index& index, bool row_scope) const {
    return cpp::index_text(k_, index, inner_, row_scope);
  }

  std::string iota_text(const Value& v, bool row_scope) const {
    return cpp::iota_text(k_, v, inner_, row_scope);
  }

  static std::string value_name(int id) { return "v" + std::to_string(id); }

  struct Scope {
    std::string* code;
    std::set<int>* done;
    bool row_scope;
    std::string indent;
  };

  // Makes sure value `id` is defined in the right scope and returns its name.
  std::string ref(int id, Scope& scope) {
    if (row_ && per_row_[id] && !scope.row_scope) {
      Scope row{&row_code_, &row_done_, true, row_indent_};
      return ref(id, row);
    }
    if (scope.done->count(id)) return value_name(id);
    const Value& v = k_.values[id];
    std::string e;
    switch (v.kind) {
      case ValueKind::Literal: e = table_.literal(v.literal, v.dtype); break;
      case ValueKind::Load:
        e = table_.load(v.dtype, "p" + std::to_string(v.param) + "[" + index_text(v.index, scope.row_scope) + "]");
        break;
      case ValueKind::IotaAt: e = table_.from_index(v.dtype, iota_text(v, scope.row_scope)); break;
      case ValueKind::Accumulated: e = "r" + std::to_string(v.args[0]); break;
      case ValueKind::Compute: {
        std::vector<std::string> args;
        for (int a : v.args) args.push_back(ref(a, scope));
        const DType in = v.op == ir::Op::Where ? k_.values[v.args[1]].dtype : k_.values[v.args[0]].dtype;
        bool may_fail = false;
        e = table_.op(v.op, in, v.dtype, args, may_fail);
        break;
      }
      case ValueKind::GatherLoad: {
        // Out of range: report, and read element 0 instead (no early return, see emit.h).
        const std::string idx = ref(v.args[0], scope);
        const std::string g = "g" + std::to_string(id);
        const std::string extent = expr_text(v.extent);
        *scope.code += scope.indent + "int64_t " + g + " = (int64_t)" + idx + ";\n";
        *scope.code += scope.indent + "if (" + g + " < 0 || " + g + " >= " + extent + ") { lm_report(lm_info, 1, " + g +
                       ", " + extent + "); " + g + " = 0; }\n";
        e = table_.load(v.dtype, "p" + std::to_string(v.param) + "[" + index_text(v.index, scope.row_scope) + " + " + g +
                                     " * " + expr_text(v.gather_stride) + "]");
        break;
      }
    }
    *scope.code += scope.indent + "const " + table_.compute_type(v.dtype) + " " + value_name(id) + " = " + e + ";\n";
    scope.done->insert(id);
    return value_name(id);
  }

  std::string store_line(const Store& s, Scope& scope) {
    const Param& p = k_.params[s.param];
    const std::string v = ref(s.value, scope);
    const DType from = k_.values[s.value].dtype;
    const std::string converted = from == p.dtype ? v : table_.convert(from, p.dtype, v);
    return scope.indent + "p" + std::to_string(s.param) + "[" + index_text(s.index, scope.row_scope) +
           "] = " + table_.store(p.dtype, converted) + ";\n";
  }

  // ---- pointwise: one thread per element ----
  std::string pointwise_body() {
    std::string code;
    std::set<int> done;
    Scope scope{&code, &done, false, "    "};
    for (const Store& s : k_.stores) code += store_line(s, scope);
    std::vector<int> dims;
    for (int d = 0; d < rank_; ++d) dims.push_back(d);
    std::ostringstream out;
    out << "  const int64_t lm_n = " << expr_text(ir::numel(k_.domain)) << ";\n";
    out << "  for (int64_t lm_e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lm_e < lm_n; "
           "lm_e += (int64_t)gridDim.x * blockDim.x) {\n";
    out << decompose(k_.domain, dims, "lm_e", "i", code, "    ") << code << "  }\n";
    return out.str();
  }

  // ---- row kernels: one block per row ----
  std::string row_body() {
    row_indent_ = "    ";
    const std::string inner_var = "i" + std::to_string(inner_);
    const std::string loop = "    for (int64_t " + inner_var + " = threadIdx.x; " + inner_var + " < lm_k; " + inner_var +
                             " += blockDim.x) {\n";
    std::string rows;  // the body of the loop over rows
    row_code_.clear();
    row_done_.clear();
    bool needs_elements = false;
    for (size_t ri = 0; ri < k_.reductions.size(); ++ri) {
      const Reduction& r = k_.reductions[ri];
      const DType in_dtype = k_.values[r.input].dtype;
      cpp::ReductionText text = table_.reduction(r.op, in_dtype, static_cast<int>(ri));
      needs_elements |= text.needs_elements;
      std::string body;
      std::set<int> done;
      Scope scope{&body, &done, false, "      "};
      const std::string x = ref(r.input, scope);
      const std::string acc = "acc" + std::to_string(ri);
      std::string combine = text.combine;
      replace_all(combine, "%a", acc);
      replace_all(combine, "%x", x);
      std::string finish = text.finish;
      replace_all(finish, "%a", acc);
      rows += row_code_;  // per-row values this pass needs
      row_code_.clear();
      rows += "    " + text.accumulator_type + " " + acc + " = " + text.init + ";\n";
      if (!text.extra_declaration.empty()) rows += "    " + text.extra_declaration + "\n";
      rows += loop + body + "      " + combine + "\n    }\n";
      rows += "    " + acc + " = lm_block_reduce(" + acc + ", " + table_.merge_functor(r.op) + "());\n";
      // The C++ table's max/min over floats keeps a NaN flag named nan<id> beside the accumulator.
      const std::string nan = "nan" + std::to_string(ri);
      if (mentions(text.extra_declaration, nan))
        rows += "    " + nan + " = lm_block_reduce(" + nan + ", lm_or_op());\n";
      const std::string result_type = table_.compute_type(r.dtype);
      rows += "    const " + result_type + " r" + std::to_string(ri) + " = " +
              table_.round(r.dtype, "(" + result_type + ")(" + finish + ")") + ";\n";
    }
    std::string final_body;
    std::set<int> final_done;
    Scope final_scope{&final_body, &final_done, false, "      "};
    std::string row_stores;
    Scope row_scope{&row_code_, &row_done_, true, "    "};
    for (const Store& s : k_.stores) {
      if (per_row_[s.value] && index_per_row(s.index)) {
        std::string line = store_line(s, row_scope);
        row_stores += "  " + line;
      } else {
        std::string line = store_line(s, final_scope);
        final_body += line;
      }
    }
    rows += row_code_;
    row_code_.clear();
    if (!final_body.empty()) rows += loop + final_body + "    }\n";
    if (!row_stores.empty()) rows += "    if (threadIdx.x == 0) {\n" + row_stores + "    }\n";

    std::vector<int> outer;
    for (int d = 0; d < rank_; ++d)
      if (d != inner_) outer.push_back(d);
    std::ostringstream out;
    out << "  const int64_t lm_rows = " << expr_text(k_.parallel_extent()) << ";\n";
    out << "  const int64_t lm_k = " << expr_text(k_.domain[inner_]) << ";\n";
    // Max/min over an empty axis: the whole grid sees the same extent, so returning is uniform.
    if (needs_elements)
      out << "  if (lm_k == 0) { if (blockIdx.x == 0 && threadIdx.x == 0) lm_report(lm_info, 2, 0, 0); return; }\n";
    out << "  for (int64_t lm_p = blockIdx.x; lm_p < lm_rows; lm_p += gridDim.x) {\n";
    out << decompose(k_.domain, outer, "lm_p", "i", rows, "    ") << rows << "  }\n";
    return out.str();
  }

  // ---- gemv: one warp per output element ----
  std::string gemv_body() const {
    const GemvSpec& g = k_.gemv;
    const DType t = k_.params[2].dtype;
    INTERNAL_CHECK(t == DType::F32 || t == DType::BF16 || t == DType::F16) << "gemv of " << ir::dtype_name(t);
    const std::string storage = table_.storage_type(t);
    std::string per_output;
    per_output += "    const " + storage + "* lm_a = p0 + (" + index_text(g.a, false) + ");\n";
    per_output += "    const " + storage + "* lm_w = p1 + (" + index_text(g.w, false) + ");\n";
    // f32 accumulation, rounded once on store, as the C++ GEMV and torch's half matmul do.
    per_output += "    float lm_sum = 0.0f;\n";
    per_output += "    for (int64_t lm_k = lm_lane; lm_k < lm_depth; lm_k += 32) lm_sum += " +
                  table_.load(t, "lm_a[lm_k]") + " * " + table_.load(t, "lm_w[lm_k]") + ";\n";
    per_output += "    lm_sum = lm_warp_reduce(lm_sum, lm_sum_op());\n";
    per_output += "    if (lm_lane == 0) p2[" + index_text(g.out, false) + "] = " + table_.store(t, "lm_sum") + ";\n";
    std::vector<int> dims;
    for (int d = 0; d < rank_; ++d) dims.push_back(d);
    std::ostringstream out;
    out << "  const int64_t lm_n = " << expr_text(ir::numel(k_.domain)) << ";\n";
    out << "  const int64_t lm_depth = " << expr_text(g.depth) << ";\n";
    out << "  const int lm_lane = threadIdx.x & 31;\n";
    out << "  for (int64_t lm_e = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; lm_e < lm_n; "
           "lm_e += ((int64_t)gridDim.x * blockDim.x) >> 5) {\n";
    out << decompose(k_.domain, dims, "lm_e", "i", per_output, "    ") << per_output << "  }\n";
    return out.str();
  }

  // ---- scan: one thread per row ----
  // Each thread walks its rows' axis in order, as the C++ kernel and the reference do, so the
  // running sums round identically. Rows are independent; a row's length is not split.
  std::string scan_body() const {
    std::vector<int> row_dims;
    for (int d = 0; d < rank_; ++d)
      if (d != k_.scan.axis) row_dims.push_back(d);
    const std::string row = cpp::scan_row(k_, table_, "    ");
    std::ostringstream out;
    out << "  const int64_t lm_rows = " << expr_text(k_.parallel_extent()) << ";\n";
    out << "  for (int64_t lm_p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lm_p < lm_rows; "
           "lm_p += (int64_t)gridDim.x * blockDim.x) {\n";
    out << decompose(k_.domain, row_dims, "lm_p", "i", row, "    ") << row << "  }\n";
    return out.str();
  }

  // ---- scatter: one block ----
  static std::string index_over(const Index& index, const std::string& prefix) {
    std::string s = expr_text(index.offset);
    for (size_t d = 0; d < index.strides.size(); ++d)
      if (!is_zero(index.strides[d])) s += " + " + prefix + std::to_string(d) + " * " + expr_text(index.strides[d]);
    return s;
  }

  // A loop over every element of `shape` with `body` (using prefix<d>): block-strided, or on
  // one thread in order.
  static std::string elements_loop(const ir::Shape& shape, const std::string& prefix, const std::string& body,
                                   bool serial, const std::string& indent) {
    std::vector<int> dims;
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) dims.push_back(d);
    std::string out = indent + "for (int64_t lm_e = " + std::string(serial ? "0" : "threadIdx.x") + "; lm_e < " +
                      expr_text(ir::numel(shape)) + "; " + (serial ? "++lm_e" : "lm_e += blockDim.x") + ") {\n";
    out += decompose(shape, dims, "lm_e", prefix, body, indent + "  ") + body + indent + "}\n";
    return out;
  }

  std::string scatter_body() const {
    const ScatterSpec& s = k_.scatter;
    const DType t = k_.params[0].dtype;
    std::vector<Expr> strides(s.out_shape.size());
    Expr stride(int64_t{1});
    for (int d = static_cast<int>(s.out_shape.size()) - 1; d >= 0; --d) {
      strides[d] = stride;
      stride = stride * s.out_shape[d];
    }
    std::string code;
    // out = data, skipped when the caller made them the same buffer (an in-place cache update).
    const Index out_index{Expr(int64_t{0}), strides};
    code += "  if ((const void*)p0 != (const void*)p1) {\n" +
            elements_loop(s.out_shape, "c",
                          "      p0[" + index_over(out_index, "c") + "] = p1[" + index_over(s.data, "c") + "];\n", false,
                          "    ") +
            "  }\n  __syncthreads();\n";
    Index target{Expr(int64_t{0}), {}};
    for (size_t d = 0; d < s.index_shape.size(); ++d)
      target.strides.push_back(static_cast<int>(d) == s.axis ? Expr(int64_t{0}) : strides[d]);
    const std::string extent = expr_text(s.out_shape[s.axis]);
    // The scatter loop: block-strided, or (accumulating) on thread 0 in order, one level deeper.
    const std::string loop_indent = s.accumulate ? "    " : "  ";
    const std::string in = loop_indent + "  ";
    const std::string src = "p3[" + index_over(s.src, "j") + "]";
    std::string body = in + "int64_t g = p2[" + index_over(s.index, "j") + "];\n" + in + "if (g < 0 || g >= " + extent +
                       ") { lm_report(lm_info, 1, g, " + extent + "); continue; }\n" + in + "const int64_t o = " +
                       index_over(target, "j") + " + g * " + expr_text(strides[s.axis]) + ";\n";
    if (!s.accumulate) {
      // Duplicate indices: some write wins, as torch.scatter documents (the CPU runtime's is the last).
      body += in + "p0[o] = " + src + ";\n";
      code += elements_loop(s.index_shape, "j", body, false, loop_indent);
    } else {
      // In order on one thread: the sums round as the reference's do, duplicates included.
      bool unused = false;
      const std::string sum = table_.op(ir::Op::Add, t, t, {table_.load(t, "p0[o]"), table_.load(t, src)}, unused);
      body += in + "p0[o] = " + table_.store(t, sum) + ";\n";
      code += "  if (threadIdx.x == 0) {\n" + elements_loop(s.index_shape, "j", body, true, loop_indent) + "  }\n";
    }
    return code;
  }

  const Kernel& k_;
  const CudaOpTable& table_;
  int rank_ = 0;
  bool row_ = false;
  int inner_ = -1;
  std::vector<bool> per_row_;
  std::string row_code_;
  std::set<int> row_done_;
  std::string row_indent_ = "    ";
};

}  // namespace

const char* launch_kind_name(LaunchSpec::Kind kind) {
  switch (kind) {
    case LaunchSpec::Kind::Elementwise: return "one thread per element";
    case LaunchSpec::Kind::Row: return "one block per row";
    case LaunchSpec::Kind::Warp: return "one warp per output";
    case LaunchSpec::Kind::Single: return "one block";
  }
  return "?";
}

CudaKernelSource emit_kernel(const Kernel& kernel, const std::string& name) { return Emitter(kernel).emit(name); }

}  // namespace luminal::codegen::cuda
