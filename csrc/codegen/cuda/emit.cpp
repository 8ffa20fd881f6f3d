#include "codegen/cuda/emit.h"

#include <algorithm>
#include <cmath>
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
      case KernelKind::Attention: {
        const int64_t rows = attention_rows_per_block(k_);
        launch.kind = LaunchSpec::Kind::Attention;
        launch.work = k_.parallel_extent() * floordiv(k_.attention.q_len + Expr(rows - 1), Expr(rows));
        // A warp per query row, up to 8; a decode step's single row gets a one-warp block.
        const Expr& q_len = k_.attention.q_len;
        const int64_t busy_rows = q_len.is_constant() ? std::min(rows, q_len.constant_value()) : rows;
        launch.block_threads = 32 * static_cast<int>(std::clamp<int64_t>(busy_rows, 1, kBlockThreads / 32));
        body = attention_body(rows);
        break;
      }
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
    out << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_threads << ") " << name << "(";
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
    // cuBLASLt multiplies half types natively: the plan lowers only passes::is_gemv matmuls here.
    INTERNAL_CHECK(!g.columns) << "column gemv on cuda";
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

  // ---- attention: one block per query tile, one warp per query row ----
  // The C++ kernel's semantics (lm_attention_head in codegen/cpp/prelude.cpp), over the same
  // blocks of query rows (attention_rows_per_block):
  //  - a block reads only its key window [first, last): the columns whose bias is not -inf in
  //    some row of the block (every column without a bias). Outside it every probability is
  //    exactly 0, and those keys and values are never read (a causal triangle, a static cache's
  //    unused tail). The C++ kernel's window also starts at a 16-key strip boundary counted from
  //    the head's first attended key; the few columns that adds are -inf in every row of the
  //    block too, so they change nothing unless q·k there is NaN or +inf (a non-finite key),
  //    where the C++ kernel's rows become NaN and these do not read them.
  //  - scores are q·k accumulated with fused multiply-adds in head-dim order (the C++ kernel's
  //    BLAS-like tiles do the same), then scaled and biased as two rounded f32 ops (the
  //    reference's Mul and Add);
  //  - the row max skips NaN, and a row whose max is -inf takes a NaN if it has one: NaN or
  //    +inf scores make the whole row NaN, as there;
  //  - a row whose window scores are all -inf (or an empty window) gets sum_j 0 * v[j]: zeros,
  //    as torch's _safe_softmax gives, unless a value in the window is not finite.
  // Per row, pass 1 finds the max (lanes stride the keys); pass 2 recomputes each lane's
  // score, sums the exps and accumulates exp * v with the lanes striding the value columns
  // (`columns_per_lane` registers each, another pass per 32 * columns_per_lane columns); the
  // output is that sum over the sum of exps, rounded once on store. No thread returns early:
  // the window is a block reduction.
  std::string attention_body(int64_t rows) const {
    const AttentionSpec& a = k_.attention;
    const int out_param = static_cast<int>(k_.params.size()) - 1;
    for (const Param& p : k_.params)
      INTERNAL_CHECK(p.dtype == DType::F32 || p.dtype == DType::BF16 || p.dtype == DType::F16)
          << "attention over " << ir::dtype_name(p.dtype);
    INTERNAL_CHECK(std::isfinite(a.scale)) << "attention scale " << a.scale;
    // Registers of output columns per lane: the whole row in one pass for value dims up to 256.
    const int64_t columns_per_lane =
        a.value_dim.is_constant() ? std::clamp<int64_t>((a.value_dim.constant_value() + 31) / 32, 1, 8) : 4;
    const std::string cpl = std::to_string(columns_per_lane);
    auto load = [&](int param, const std::string& element) { return table_.load(k_.params[param].dtype, element); };
    auto storage = [&](int param) { return table_.storage_type(k_.params[param].dtype); };
    std::ostringstream scale;
    scale.precision(17);
    scale << a.scale;

    // The head's matrices, from the batch dims' indices.
    std::string pointers;
    auto pointer = [&](const std::string& var, int param, const MatrixOperand& m) {
      pointers += "    const " + storage(param) + "* " + var + " = p" + std::to_string(param) + " + (" +
                  index_over(m.batch, "i") + ");\n";
    };
    pointer("lm_q", 0, a.q);
    pointer("lm_k", 1, a.k);
    pointer("lm_v", 2, a.v);
    if (a.has_bias) pointer("lm_b", 3, a.bias);
    std::vector<int> batch_dims;
    for (int d = 0; d + 2 < rank_; ++d) batch_dims.push_back(d);

    const std::string bias_at = a.has_bias ? load(3, "lm_b[lm_l * " + expr_text(a.bias.row_stride) + " + lm_j * " +
                                                         expr_text(a.bias.col_stride) + "]")
                                           : "";
    std::ostringstream out;
    out << "  const int64_t lm_L = " << expr_text(a.q_len) << ";\n";
    out << "  const int64_t lm_S = " << expr_text(a.kv_len) << ";\n";
    out << "  const int64_t lm_E = " << expr_text(a.head_dim) << ";\n";
    out << "  const int64_t lm_Ev = " << expr_text(a.value_dim) << ";\n";
    out << "  const int64_t lm_tiles = (lm_L + " << rows - 1 << ") / " << rows << ";  // blocks of " << rows
        << " query rows\n";
    out << "  const int64_t lm_items = " << expr_text(k_.parallel_extent()) << " * lm_tiles;\n";
    out << "  const float lm_scale = (float)" << scale.str() << ";\n";
    out << "  const int lm_lane = threadIdx.x & 31;\n";
    out << "  const int lm_warps = blockDim.x >> 5;\n";
    out << "  for (int64_t lm_item = blockIdx.x; lm_item < lm_items; lm_item += gridDim.x) {\n";
    out << "    const int64_t lm_h = lm_item / lm_tiles;\n";
    out << "    const int64_t lm_r0 = lm_item % lm_tiles * " << rows << ";\n";
    out << "    const int64_t lm_r1 = lm_imin(lm_r0 + " << rows << ", lm_L);\n";
    out << decompose(k_.domain, batch_dims, "lm_h", "i", pointers, "    ") << pointers;
    out << "    " << storage(out_param) << "* lm_o = p" << out_param << " + lm_h * lm_L * lm_Ev;\n";
    if (a.has_bias) {
      out << "    // The block's key window: outside it every row's bias is -inf.\n";
      out << "    int64_t lm_first = lm_S, lm_last = 0;\n";
      out << "    for (int64_t lm_l = lm_r0; lm_l < lm_r1; ++lm_l)\n";
      out << "      for (int64_t lm_j = threadIdx.x; lm_j < lm_S; lm_j += blockDim.x)\n";
      out << "        if (" << bias_at << " != -lm_inff()) {\n";
      out << "          lm_first = lm_imin(lm_first, lm_j);\n";
      out << "          lm_last = lm_imax(lm_last, lm_j + 1);\n";
      out << "        }\n";
      out << "    const int64_t lm_lo = lm_block_reduce(lm_first, lm_min_op());\n";
      out << "    const int64_t lm_hi = lm_block_reduce(lm_last, lm_max_op());\n";
    } else {
      out << "    const int64_t lm_lo = 0, lm_hi = lm_S;\n";
    }
    out << "    // (q·k) * scale + bias for query row lm_l and key lm_j.\n";
    out << "    auto lm_score = [&](const int64_t lm_l, const int64_t lm_j) {\n";
    out << "      const " << storage(0) << "* lm_qr = lm_q + lm_l * " << expr_text(a.q.row_stride) << ";\n";
    out << "      const " << storage(1) << "* lm_kj = lm_k + lm_j * " << expr_text(a.k.row_stride) << ";\n";
    out << "      float lm_dot = 0.0f;\n";
    out << "      for (int64_t lm_d = 0; lm_d < lm_E; ++lm_d)\n";
    out << "        lm_dot = fmaf(" << load(0, "lm_qr[lm_d * " + expr_text(a.q.col_stride) + "]") << ", "
        << load(1, "lm_kj[lm_d * " + expr_text(a.k.col_stride) + "]") << ", lm_dot);\n";
    if (a.has_bias)
      out << "      return __fadd_rn(__fmul_rn(lm_dot, lm_scale), " << bias_at << ");\n";
    else
      out << "      return __fmul_rn(lm_dot, lm_scale);\n";
    out << "    };\n";
    out << "    for (int64_t lm_l = lm_r0 + (threadIdx.x >> 5); lm_l < lm_r1; lm_l += lm_warps) {\n";
    out << "      float lm_m = -lm_inff();\n";
    out << "      int lm_nan = 0;\n";
    out << "      for (int64_t lm_j = lm_lo + lm_lane; lm_j < lm_hi; lm_j += 32) {\n";
    out << "        const float lm_s = lm_score(lm_l, lm_j);\n";
    out << "        lm_m = lm_s > lm_m ? lm_s : lm_m;\n";
    out << "        lm_nan |= lm_s != lm_s;\n";
    out << "      }\n";
    out << "      lm_m = lm_warp_reduce(lm_m, lm_max_op());\n";
    out << "      lm_nan = lm_warp_reduce(lm_nan, lm_or_op());\n";
    out << "      if (lm_m == -lm_inff() && lm_nan) lm_m = lm_nanf(\"\");\n";
    out << "      const bool lm_masked = lm_m == -lm_inff();  // every probability is 0\n";
    out << "      " << storage(out_param) << "* lm_out = lm_o + lm_l * lm_Ev;\n";
    out << "      for (int64_t lm_c0 = 0; lm_c0 < lm_Ev; lm_c0 += " << 32 * columns_per_lane << ") {\n";
    out << "        float lm_acc[" << cpl << "];\n";
    out << "#pragma unroll\n";
    out << "        for (int lm_t = 0; lm_t < " << cpl << "; ++lm_t) lm_acc[lm_t] = 0.0f;\n";
    out << "        float lm_sum = 0.0f;\n";
    out << "        for (int64_t lm_j0 = lm_lo; lm_j0 < lm_hi; lm_j0 += 32) {\n";
    out << "          float lm_e = 0.0f;\n";
    out << "          if (lm_j0 + lm_lane < lm_hi && !lm_masked)\n";
    out << "            lm_e = lm_expf(lm_score(lm_l, lm_j0 + lm_lane) - lm_m);\n";
    out << "          lm_sum += lm_e;\n";
    out << "          const int lm_n = (int)lm_imin(32, lm_hi - lm_j0);\n";
    out << "          for (int lm_i = 0; lm_i < lm_n; ++lm_i) {\n";
    out << "            const float lm_p = __shfl_sync(0xffffffffu, lm_e, lm_i);\n";
    out << "            const " << storage(2) << "* lm_vj = lm_v + (lm_j0 + lm_i) * " << expr_text(a.v.row_stride)
        << ";\n";
    out << "#pragma unroll\n";
    out << "            for (int lm_t = 0; lm_t < " << cpl << "; ++lm_t) {\n";
    out << "              const int64_t lm_c = lm_c0 + lm_lane + 32 * lm_t;\n";
    out << "              if (lm_c < lm_Ev) lm_acc[lm_t] = fmaf(lm_p, "
        << load(2, "lm_vj[lm_c * " + expr_text(a.v.col_stride) + "]") << ", lm_acc[lm_t]);\n";
    out << "            }\n";
    out << "          }\n";
    out << "        }\n";
    out << "        lm_sum = lm_warp_reduce(lm_sum, lm_sum_op());\n";
    out << "#pragma unroll\n";
    out << "        for (int lm_t = 0; lm_t < " << cpl << "; ++lm_t) {\n";
    out << "          const int64_t lm_c = lm_c0 + lm_lane + 32 * lm_t;\n";
    out << "          if (lm_c < lm_Ev) lm_out[lm_c] = "
        << table_.store(k_.params[out_param].dtype, "(lm_masked ? lm_acc[lm_t] : lm_acc[lm_t] / lm_sum)") << ";\n";
    out << "        }\n";
    out << "      }\n";
    out << "    }\n";
    out << "  }\n";
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
    case LaunchSpec::Kind::Attention: return "one block per query tile";
  }
  return "?";
}

int64_t attention_rows_per_block(const Kernel& kernel) {
  const int64_t tile = kernel.tile > 0 ? kernel.tile : kAttentionRows;
  return (tile + 5) / 6 * 6;
}

CudaKernelSource emit_kernel(const Kernel& kernel, const std::string& name) { return Emitter(kernel).emit(name); }

}  // namespace luminal::codegen::cuda
