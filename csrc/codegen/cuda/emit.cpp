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
using cpp::mentions;
using cpp::replace_all;
using cpp::symbol_var;
using ir::DType;
using ir::Expr;
using ir::is_half;

constexpr int kBlockThreads = 256;

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
        // An accumulating scatter runs on one thread; a plain one over the grid (see scatter_body).
        launch.kind = k_.scatter.accumulate ? LaunchSpec::Kind::Single : LaunchSpec::Kind::Elementwise;
        launch.work = k_.scatter.accumulate ? Expr(int64_t{1}) : ir::numel(k_.scatter.index_shape);
        body = scatter_body();
        break;
      case KernelKind::Attention: {
        const int64_t rows = attention_rows_per_block(k_);
        launch.kind = LaunchSpec::Kind::Attention;
        launch.work = k_.parallel_extent() * floordiv(k_.attention.q_len + Expr(rows - 1), Expr(rows));
        // A warp per query row, up to 8 warps (the tiled kernel gives each several rows); a
        // decode step's single row is split over 8 warps by key tiles where its value row fits
        // their registers.
        const Expr& q_len = k_.attention.q_len;
        const int64_t busy_rows = q_len.is_constant() ? std::min(rows, q_len.constant_value()) : rows;
        launch.block_threads = split_keys_columns() > 0
                                   ? kBlockThreads
                                   : 32 * static_cast<int>(std::clamp<int64_t>(busy_rows, 1, kBlockThreads / 32));
        body = attention_body(rows, busy_rows, launch.block_threads / 32);
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
  // The operands are the output's dtype, or (passes/quantized_weights.h) an int8 weight times
  // f32 or bf16 activations, or int8 times int8 summed exactly in i32 (torchao's _int_mm), or
  // (passes/group_quantized_gemv.h, `group` > 0) an int8 weight dequantized per group of K in
  // registers, w = (q - zero) * scale in the Linear's dtype (torchao's int4, one value a byte).
  std::string gemv_body() const {
    const GemvSpec& g = k_.gemv;
    const DType t = k_.params[2].dtype;
    const DType a_type = k_.params[0].dtype, w_type = k_.params[1].dtype;
    const bool int8_weight = w_type == DType::I8;
    const bool grouped = g.group > 0;
    INTERNAL_CHECK(!grouped || (int8_weight && (t == DType::F32 || t == DType::BF16) && k_.params[3].dtype == t))
        << "a group-quantized gemv of " << ir::dtype_name(w_type) << " into " << ir::dtype_name(t);
    // The CUDA runtime adds biases in cuBLASLt's epilogue; only the cpu runtime's strips take one.
    INTERNAL_CHECK(!g.has_bias && !g.has_output_scale) << "a bias or scale epilogue on a CUDA GEMV: " << k_.label;
    INTERNAL_CHECK(t == DType::I32 ? (a_type == DType::I8 || a_type == DType::U8) && int8_weight
                                   : (t == DType::F32 || t == DType::BF16 || t == DType::F16) && a_type == t &&
                                         (w_type == t || (int8_weight && t != DType::F16)))
        << "gemv of " << ir::dtype_name(a_type) << " by " << ir::dtype_name(w_type) << " into " << ir::dtype_name(t);
    // cuBLASLt multiplies half types natively: the plan lowers only passes::is_gemv matmuls here.
    INTERNAL_CHECK(!g.columns) << "column gemv on cuda";
    std::string per_output;
    per_output += "    const " + table_.storage_type(a_type) + "* lm_a = p0 + (" + index_text(g.a, false) + ");\n";
    per_output += "    const " + table_.storage_type(w_type) + "* lm_w = p1 + (" + index_text(g.w, false) + ");\n";
    if (grouped) {
      per_output += "    const " + table_.storage_type(t) + "* lm_s = p3 + (" + index_text(g.scale, false) + ");\n";
      if (g.has_zero)
        per_output +=
            "    const " + table_.storage_type(DType::I8) + "* lm_z = p4 + (" + index_text(g.zero, false) + ");\n";
    }
    // The scale (and zero point) of the group holding depth position `k` (text): lm_gs, lm_gz.
    auto group_constants = [&](const std::string& k, const std::string& indent) {
      std::string text = indent + "const int64_t lm_g = (" + k + ") / INT64_C(" + std::to_string(g.group) + ");\n";
      text += indent + "const float lm_gs = " +
              table_.load(t, "lm_s[lm_g * (" + expr_text(g.scale_group_stride) + ")]") + ";\n";
      if (g.has_zero)
        text += indent + "const float lm_gz = (float)lm_z[lm_g * (" + expr_text(g.zero_group_stride) + ")];\n";
      return text;
    };
    // The int8 weight `q` (text) as the value the product reads: widened, or for a grouped
    // weight dequantized as the IR's Sub and Mul compute it in the Linear's dtype (q - zero is
    // exact; the product is rounded once, to bf16 for a bf16 Linear).
    auto weight = [&](const std::string& q) {
      if (!grouped) return "(float)" + q;
      const std::string product =
          g.has_zero ? "__fmul_rn((float)" + q + " - lm_gz, lm_gs)" : "__fmul_rn((float)" + q + ", lm_gs)";
      return t == DType::BF16 ? "lm_rbf(" + product + ")" : product;
    };
    // f32 accumulation, rounded once on store, as the C++ GEMV and torch's half matmul do (i32,
    // wrapping as torch's does, for int8 x int8). Where both rows start 16-byte aligned, each
    // lane reads 16-byte chunks of the weight (several loads in flight per lane: a decode step's
    // GEMVs are bound by how fast the weights stream in) and the activations they multiply; the
    // rest of the row, or all of a misaligned one, element by element. A grouped weight's chunks
    // each lie in one group where the group is a multiple of 16 weights (torchao's 32 to 256);
    // any other group is read element by element.
    const int per_chunk = int8_weight ? 16 : t == DType::F32 ? 4 : 8;
    per_output += t == DType::I32 ? "    int32_t lm_sum = 0;\n" : "    float lm_sum = 0.0f;\n";
    per_output += "    int64_t lm_tail = 0;\n";
    if (!grouped || g.group % per_chunk == 0) {
      per_output += "    if ((((unsigned long long)lm_a | (unsigned long long)lm_w) & 15) == 0) {\n";
      per_output += "      const int64_t lm_chunks = lm_depth / " + std::to_string(per_chunk) + ";\n";
      per_output += "#pragma unroll 4\n";
      per_output += "      for (int64_t lm_c = lm_lane; lm_c < lm_chunks; lm_c += 32) {\n";
      per_output += "        const uint4 lm_wv = reinterpret_cast<const uint4*>(lm_w)[lm_c];\n";
      if (grouped) per_output += group_constants("lm_c * " + std::to_string(per_chunk), "        ");
      if (t == DType::I32) {
        // dp4a: four int8 products and the running sum in one instruction; uint8 activations
        // (torchao's CPU form for AVX512-VNNI) by int8 weights through PTX's mixed-sign form, which
        // CUDA's __dp4a overloads lack.
        per_output += "        const uint4 lm_av = reinterpret_cast<const uint4*>(lm_a)[lm_c];\n";
        for (const char* f : {"x", "y", "z", "w"})
          per_output +=
              a_type == DType::U8
                  ? std::string("        asm(\"dp4a.u32.s32 %0, %1, %2, %0;\" : \"+r\"(lm_sum) : \"r\"(lm_av.") + f +
                        "), \"r\"(lm_wv." + f + "));\n"
                  : std::string("        lm_sum = __dp4a((int)lm_av.") + f + ", (int)lm_wv." + f + ", lm_sum);\n";
      } else if (int8_weight) {
        // Sixteen int8 weights widen in registers; their sixteen activations are four float4
        // (f32) or two uint4 of bf16 pairs.
        per_output += "        const char4* lm_wq = reinterpret_cast<const char4*>(&lm_wv);\n";
        if (t == DType::F32) {
          per_output += "        const float4* lm_ac = reinterpret_cast<const float4*>(lm_a) + lm_c * 4;\n";
          per_output += "#pragma unroll\n";
          per_output += "        for (int lm_q = 0; lm_q < 4; ++lm_q) {\n";
          per_output += "          const float4 lm_af = lm_ac[lm_q];\n";
          for (const char* f : {"x", "y", "z", "w"})
            per_output += std::string("          lm_sum = fmaf(lm_af.") + f + ", " +
                          weight(std::string("lm_wq[lm_q].") + f) + ", lm_sum);\n";
          per_output += "        }\n";
        } else {
          per_output += "        const uint4* lm_ac = reinterpret_cast<const uint4*>(lm_a) + lm_c * 2;\n";
          per_output += "#pragma unroll\n";
          per_output += "        for (int lm_q = 0; lm_q < 2; ++lm_q) {\n";
          per_output += "          const uint4 lm_av = lm_ac[lm_q];\n";
          per_output +=
              "          const __nv_bfloat162* lm_ap = reinterpret_cast<const __nv_bfloat162*>(&lm_av);\n";
          per_output += "#pragma unroll\n";
          per_output += "          for (int lm_h = 0; lm_h < 2; ++lm_h) {\n";
          per_output += "            const char4 lm_q4 = lm_wq[lm_q * 2 + lm_h];\n";
          per_output += "            const float2 lm_a0 = __bfloat1622float2(lm_ap[lm_h * 2]);\n";
          per_output += "            const float2 lm_a1 = __bfloat1622float2(lm_ap[lm_h * 2 + 1]);\n";
          per_output += "            lm_sum = fmaf(lm_a0.x, " + weight("lm_q4.x") + ", lm_sum);\n";
          per_output += "            lm_sum = fmaf(lm_a0.y, " + weight("lm_q4.y") + ", lm_sum);\n";
          per_output += "            lm_sum = fmaf(lm_a1.x, " + weight("lm_q4.z") + ", lm_sum);\n";
          per_output += "            lm_sum = fmaf(lm_a1.y, " + weight("lm_q4.w") + ", lm_sum);\n";
          per_output += "          }\n";
          per_output += "        }\n";
        }
      } else if (t == DType::F32) {
        per_output += "        const float4 lm_av = reinterpret_cast<const float4*>(lm_a)[lm_c];\n";
        per_output += "        const float4 lm_wf = *reinterpret_cast<const float4*>(&lm_wv);\n";
        for (const char* f : {"x", "y", "z", "w"})
          per_output += std::string("        lm_sum = fmaf(lm_av.") + f + ", lm_wf." + f + ", lm_sum);\n";
      } else {
        const std::string pair = t == DType::BF16 ? "__nv_bfloat162" : "__half2";
        const std::string widen = t == DType::BF16 ? "__bfloat1622float2" : "__half22float2";
        per_output += "        const uint4 lm_av = reinterpret_cast<const uint4*>(lm_a)[lm_c];\n";
        per_output += "        const " + pair + "* lm_ap = reinterpret_cast<const " + pair + "*>(&lm_av);\n";
        per_output += "        const " + pair + "* lm_wp = reinterpret_cast<const " + pair + "*>(&lm_wv);\n";
        per_output += "#pragma unroll\n";
        per_output += "        for (int lm_q = 0; lm_q < 4; ++lm_q) {\n";
        per_output +=
            "          const float2 lm_af = " + widen + "(lm_ap[lm_q]), lm_wf = " + widen + "(lm_wp[lm_q]);\n";
        per_output += "          lm_sum = fmaf(lm_af.x, lm_wf.x, lm_sum);\n";
        per_output += "          lm_sum = fmaf(lm_af.y, lm_wf.y, lm_sum);\n";
        per_output += "        }\n";
      }
      per_output += "      }\n";
      per_output += "      lm_tail = lm_chunks * " + std::to_string(per_chunk) + ";\n";
      per_output += "    }\n";
    }
    per_output += "    for (int64_t lm_k = lm_tail + lm_lane; lm_k < lm_depth; lm_k += 32)";
    per_output += grouped ? " {\n" + group_constants("lm_k", "      ") : "\n";
    if (grouped)
      per_output += "      lm_sum = fmaf(" + table_.load(a_type, "lm_a[lm_k]") + ", " + weight("lm_w[lm_k]") +
                    ", lm_sum);\n    }\n";
    else if (t == DType::I32)
      per_output +=
          "      lm_sum = (int32_t)((uint32_t)lm_sum + (uint32_t)((int32_t)lm_a[lm_k] * (int32_t)lm_w[lm_k]));\n";
    else
      per_output += "      lm_sum = fmaf(" + table_.load(a_type, "lm_a[lm_k]") + ", " +
                    (int8_weight ? std::string("(float)lm_w[lm_k]") : table_.load(w_type, "lm_w[lm_k]")) +
                    ", lm_sum);\n";
    if (t == DType::I32) {
      per_output += "    lm_sum = (int32_t)lm_warp_reduce((uint32_t)lm_sum, lm_sum_op());\n";
      per_output += "    if (lm_lane == 0) p2[" + index_text(g.out, false) + "] = lm_sum;\n";
    } else {
      per_output += "    lm_sum = lm_warp_reduce(lm_sum, lm_sum_op());\n";
      per_output += "    if (lm_lane == 0) p2[" + index_text(g.out, false) + "] = " + table_.store(t, "lm_sum") + ";\n";
    }
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

  // ---- attention: one block per query tile ----
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
  // Pass 1 finds each row's max (lanes stride the keys); pass 2 recomputes each lane's score,
  // sums the exps and accumulates exp * v with the lanes striding the value columns
  // (`columns_per_lane` registers each); the output is that sum over the sum of exps, rounded
  // once on store. No thread returns early: the window is a block reduction.
  //
  // Where the block's query rows and a tile of 32 keys fit in shared memory (attention_tiles),
  // the block stages them there as f32 and each warp computes several rows against every key
  // tile: keys are read from memory once per block, not once per row (tiled_attention_loops).
  // A decode step's single row splits its key tiles over the block's warps instead
  // (split_keys_attention_loops). Otherwise one warp per query row reads its keys and values
  // itself (per_row_attention_loops). The tiled and per-row loops add in the same order, so
  // they give the same bits; the split one adds the warps' partial sums in warp order.
  std::string attention_body(int64_t rows, int64_t busy_rows, int warps) const {
    const AttentionSpec& a = k_.attention;
    const int out_param = static_cast<int>(k_.params.size()) - 1;
    for (size_t i = 0; i < k_.params.size(); ++i) {
      const DType t = k_.params[i].dtype;
      const bool shift = a.has_shift_param && i == 3;  // a causal mask's start: an integer
      INTERNAL_CHECK(shift ? ir::is_integral(t) : t == DType::F32 || t == DType::BF16 || t == DType::F16)
          << "attention over " << ir::dtype_name(t);
    }
    INTERNAL_CHECK(std::isfinite(a.scale)) << "attention scale " << a.scale;
    std::ostringstream scale;
    scale.precision(17);
    scale << a.scale;

    // The head's matrices, from the batch dims' indices.
    std::string pointers;
    auto pointer = [&](const std::string& var, int param, const MatrixOperand& m) {
      pointers += "    const " + attention_storage(param) + "* " + var + " = p" + std::to_string(param) + " + (" +
                  index_over(m.batch, "i") + ");\n";
    };
    pointer("lm_q", 0, a.q);
    pointer("lm_k", 1, a.k);
    pointer("lm_v", 2, a.v);
    if (a.has_bias) pointer("lm_b", 3, a.bias);
    std::vector<int> batch_dims;
    for (int d = 0; d + 2 < rank_; ++d) batch_dims.push_back(d);

    const std::string bias_at = attention_bias_at();
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
    if (a.causal) {
      // Row l attends keys s <= l + lm_shift, the shift clamped to [-L, S] (the C++ kernel's
      // lm_causal_shift), its two terms first to +-2^40 so that their sum cannot overflow.
      constexpr int64_t kBound = int64_t{1} << 40;
      const int64_t constant = std::clamp(a.causal_shift, -kBound, kBound);
      const std::string value = a.has_shift_param ? "(int64_t)p3[" + expr_text(a.shift_offset) + "]" : "0";
      out << "  const int64_t lm_shift = lm_imax(-lm_L, lm_imin(lm_S, " << constant << "LL + lm_imax(-" << kBound
          << "LL, lm_imin(" << kBound << "LL, " << value << "))));\n";
    }
    const int64_t split_columns = split_keys_columns();
    const AttentionTiles tiles = attention_tiles(rows, busy_rows, warps);
    if (split_columns > 0) {
      out << "  constexpr int LM_W = " << warps << ";\n";
      out << "  __shared__ float lm_parts[LM_W][" << 32 * split_columns << "];  // each warp's exp * v sums\n";
      out << "  __shared__ float lm_sums[LM_W];  // each warp's sum of exps\n";
      out << "  const int lm_warp = threadIdx.x >> 5;\n";
    } else if (tiles.fits) {
      out << tiled_attention_shared(tiles);
    }
    out << "  for (int64_t lm_item = blockIdx.x; lm_item < lm_items; lm_item += gridDim.x) {\n";
    out << "    const int64_t lm_h = lm_item / lm_tiles;\n";
    out << "    const int64_t lm_r0 = lm_item % lm_tiles * " << rows << ";\n";
    out << "    const int64_t lm_r1 = lm_imin(lm_r0 + " << rows << ", lm_L);\n";
    out << decompose(k_.domain, batch_dims, "lm_h", "i", pointers, "    ") << pointers;
    out << "    " << attention_storage(out_param) << "* lm_o = p" << out_param << " + lm_h * lm_L * lm_Ev;\n";
    if (a.causal) {
      out << "    // The block's key window: its last row attends the most keys.\n";
      out << "    const int64_t lm_lo = 0, lm_hi = lm_imax((int64_t)0, lm_imin(lm_S, lm_r1 + lm_shift));\n";
    } else if (a.has_bias) {
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
    out << (split_columns > 0 ? split_keys_attention_loops(split_columns)
            : tiles.fits      ? tiled_attention_loops()
                              : per_row_attention_loops());
    out << "  }\n";
    return out.str();
  }

  // A decode step's attention (one query row) splits its keys over the block's warps when its
  // value row fits 8 registers per lane: the registers per lane it takes, else 0.
  int64_t split_keys_columns() const {
    const AttentionSpec& a = k_.attention;
    if (!a.q_len.is_constant() || a.q_len.constant_value() != 1 || !a.value_dim.is_constant()) return 0;
    const int64_t columns = std::max<int64_t>(1, (a.value_dim.constant_value() + 31) / 32);
    return columns <= 8 ? columns : 0;
  }

  std::string attention_load(int param, const std::string& element) const {
    return table_.load(k_.params[param].dtype, element);
  }
  std::string attention_storage(int param) const { return table_.storage_type(k_.params[param].dtype); }
  // The bias of query row lm_l and key lm_j, as f32 ("" without a bias).
  std::string attention_bias_at() const {
    const AttentionSpec& a = k_.attention;
    return a.has_bias ? attention_load(3, "lm_b[lm_l * " + expr_text(a.bias.row_stride) + " + lm_j * " +
                                              expr_text(a.bias.col_stride) + "]")
                      : "";
  }
  // (q·k) * scale + bias, from the dot product `dot`: the reference's separately rounded Mul and Add.
  // A causal mask's keys past the row's diagonal are -inf whatever q·k is, as the C++ kernel
  // never reads their scores (AttentionSpec::causal).
  std::string attention_score(const std::string& dot) const {
    const std::string scaled = "__fmul_rn(" + dot + ", lm_scale)";
    const AttentionSpec& a = k_.attention;
    if (a.causal) return "(lm_j <= lm_l + lm_shift ? " + scaled + " : -lm_inff())";
    return a.has_bias ? "__fadd_rn(" + scaled + ", " + attention_bias_at() + ")" : scaled;
  }

  // How the tiled attention lays a block's work out in shared memory (floats).
  struct AttentionTiles {
    bool fits = false;
    int warps = 0;
    int64_t rows_per_warp = 0;  // query rows each warp computes: warp w has rows w, w + warps, ...
    int64_t head_pad = 0;       // the head dim rounded up to 4: rows are read as float4, zero-padded
    int64_t row_floats = 0;     // a staged q or k row's stride: an odd count of float4, so that the
                                // 8 lanes of a quarter-warp read 8 different bank groups
    int64_t value_dim = 0;
    int64_t columns_per_lane = 0;  // value columns per lane: all of a row's in registers
    int64_t q_floats = 0, kv_floats = 0, p_floats = 0;
  };

  AttentionTiles attention_tiles(int64_t rows, int64_t busy_rows, int warps) const {
    const AttentionSpec& a = k_.attention;
    AttentionTiles t;
    if (!a.head_dim.is_constant() || !a.value_dim.is_constant()) return t;
    t.warps = warps;
    t.rows_per_warp = (std::min(rows, busy_rows) + warps - 1) / warps;
    t.head_pad = (a.head_dim.constant_value() + 3) / 4 * 4;
    t.row_floats = t.head_pad + 4;
    if ((t.row_floats / 4) % 2 == 0) t.row_floats += 4;
    t.value_dim = a.value_dim.constant_value();
    t.columns_per_lane = std::max<int64_t>(1, (t.value_dim + 31) / 32);
    t.q_floats = warps * t.rows_per_warp * t.row_floats;
    t.kv_floats = 32 * std::max(t.row_floats, t.value_dim);  // a key tile, then the same keys' values
    t.p_floats = warps * t.rows_per_warp * 32;                 // each warp's exps for the key tile
    // Static shared memory is at most 48 KiB; lm_block_reduce keeps 256 bytes of its own.
    constexpr int64_t kSharedFloats = (48 * 1024 - 256) / 4;
    t.fits = t.columns_per_lane <= 8 && t.q_floats + t.kv_floats + t.p_floats <= kSharedFloats;
    return t;
  }

  std::string tiled_attention_shared(const AttentionTiles& t) const {
    std::ostringstream out;
    out << "  constexpr int LM_W = " << t.warps << ", LM_RW = " << t.rows_per_warp << ", LM_EP = " << t.head_pad
        << ", LM_QS = " << t.row_floats << ", LM_EV = " << t.value_dim << ", LM_CPL = " << t.columns_per_lane << ";\n";
    out << "  __shared__ __align__(16) float lm_qs[" << t.q_floats << "];   // the block's query rows\n";
    out << "  __shared__ __align__(16) float lm_kv[" << t.kv_floats << "];  // a tile of 32 keys, then their values\n";
    out << "  __shared__ float lm_ps[" << t.p_floats << "];  // each warp's exps for the tile, per row\n";
    out << "  const int lm_warp = threadIdx.x >> 5;\n";
    out << "  float* const lm_pw = lm_ps + lm_warp * (LM_RW * 32);\n";
    return out.str();
  }

  std::string tiled_attention_loops() const {
    const AttentionSpec& a = k_.attention;
    const int out_param = static_cast<int>(k_.params.size()) - 1;
    std::ostringstream out;
    out << "    // Stage the block's query rows (row w + s * LM_W of the tile is warp w's slot s).\n";
    out << "    __syncthreads();  // the previous tile's reads of lm_qs are done\n";
    out << "    for (int lm_x = threadIdx.x; lm_x < LM_W * LM_RW * LM_EP; lm_x += blockDim.x) {\n";
    out << "      const int lm_r = lm_x / LM_EP, lm_d = lm_x % LM_EP;\n";
    out << "      const int64_t lm_l = lm_r0 + lm_r;\n";
    out << "      lm_qs[lm_r * LM_QS + lm_d] = lm_l < lm_r1 && lm_d < lm_E ? "
        << attention_load(0, "lm_q[lm_l * " + expr_text(a.q.row_stride) + " + lm_d * " + expr_text(a.q.col_stride) +
                                 "]")
        << " : 0.0f;\n";
    out << "    }\n";
    out << "    // Keys lm_j0 .. lm_j0 + 31 of the window into lm_kv (zeros past its end).\n";
    out << "    auto lm_stage_keys = [&](const int64_t lm_j0) {\n";
    out << "      __syncthreads();  // every warp is done with lm_kv and lm_ps\n";
    out << "      for (int lm_x = threadIdx.x; lm_x < 32 * LM_EP; lm_x += blockDim.x) {\n";
    out << "        const int lm_jj = lm_x / LM_EP, lm_d = lm_x % LM_EP;\n";
    out << "        const int64_t lm_j = lm_j0 + lm_jj;\n";
    out << "        lm_kv[lm_jj * LM_QS + lm_d] = lm_j < lm_hi && lm_d < lm_E ? "
        << attention_load(1, "lm_k[lm_j * " + expr_text(a.k.row_stride) + " + lm_d * " + expr_text(a.k.col_stride) +
                                 "]")
        << " : 0.0f;\n";
    out << "      }\n";
    out << "      __syncthreads();\n";
    out << "    };\n";
    out << "    // This lane's key against the warp's rows: fused multiply-adds in head-dim order (the\n";
    out << "    // zero padding adds exact zeros).\n";
    out << "    auto lm_dots = [&](float (&lm_dot)[LM_RW]) {\n";
    out << "#pragma unroll\n";
    out << "      for (int lm_s = 0; lm_s < LM_RW; ++lm_s) lm_dot[lm_s] = 0.0f;\n";
    out << "      const float* lm_kr = lm_kv + lm_lane * LM_QS;\n";
    out << "#pragma unroll 4\n";
    out << "      for (int lm_d = 0; lm_d < LM_EP; lm_d += 4) {\n";
    out << "        const float4 lm_kk = *reinterpret_cast<const float4*>(lm_kr + lm_d);\n";
    out << "#pragma unroll\n";
    out << "        for (int lm_s = 0; lm_s < LM_RW; ++lm_s) {\n";
    out << "          const float4 lm_qq =\n";
    out << "              *reinterpret_cast<const float4*>(lm_qs + (lm_warp + lm_s * LM_W) * LM_QS + lm_d);\n";
    out << "          lm_dot[lm_s] = fmaf(lm_qq.x, lm_kk.x, lm_dot[lm_s]);\n";
    out << "          lm_dot[lm_s] = fmaf(lm_qq.y, lm_kk.y, lm_dot[lm_s]);\n";
    out << "          lm_dot[lm_s] = fmaf(lm_qq.z, lm_kk.z, lm_dot[lm_s]);\n";
    out << "          lm_dot[lm_s] = fmaf(lm_qq.w, lm_kk.w, lm_dot[lm_s]);\n";
    out << "        }\n";
    out << "      }\n";
    out << "    };\n";
    out << "    // Pass 1: each row's max over the window, NaN-aware.\n";
    out << "    float lm_m[LM_RW];\n";
    out << "    int lm_nan[LM_RW];\n";
    out << "#pragma unroll\n";
    out << "    for (int lm_s = 0; lm_s < LM_RW; ++lm_s) { lm_m[lm_s] = -lm_inff(); lm_nan[lm_s] = 0; }\n";
    out << "    for (int64_t lm_j0 = lm_lo; lm_j0 < lm_hi; lm_j0 += 32) {\n";
    out << "      lm_stage_keys(lm_j0);\n";
    out << "      float lm_dot[LM_RW];\n";
    out << "      lm_dots(lm_dot);\n";
    out << "      const int64_t lm_j = lm_j0 + lm_lane;\n";
    out << "#pragma unroll\n";
    out << "      for (int lm_s = 0; lm_s < LM_RW; ++lm_s) {\n";
    out << "        const int64_t lm_l = lm_r0 + lm_warp + lm_s * LM_W;\n";
    out << "        if (lm_l < lm_r1 && lm_j < lm_hi) {\n";
    out << "          const float lm_x = " << attention_score("lm_dot[lm_s]") << ";\n";
    out << "          lm_m[lm_s] = lm_x > lm_m[lm_s] ? lm_x : lm_m[lm_s];\n";
    out << "          lm_nan[lm_s] |= lm_x != lm_x;\n";
    out << "        }\n";
    out << "      }\n";
    out << "    }\n";
    out << "    bool lm_masked[LM_RW];  // every probability of the row is 0\n";
    out << "#pragma unroll\n";
    out << "    for (int lm_s = 0; lm_s < LM_RW; ++lm_s) {\n";
    out << "      lm_m[lm_s] = lm_warp_reduce(lm_m[lm_s], lm_max_op());\n";
    out << "      lm_nan[lm_s] = lm_warp_reduce(lm_nan[lm_s], lm_or_op());\n";
    out << "      if (lm_m[lm_s] == -lm_inff() && lm_nan[lm_s]) lm_m[lm_s] = lm_nanf(\"\");\n";
    out << "      lm_masked[lm_s] = lm_m[lm_s] == -lm_inff();\n";
    out << "    }\n";
    out << "    // Pass 2: exps of the recomputed scores, their sums, and exp * v over the value tiles.\n";
    out << "    float lm_sum[LM_RW], lm_acc[LM_RW][LM_CPL];\n";
    out << "#pragma unroll\n";
    out << "    for (int lm_s = 0; lm_s < LM_RW; ++lm_s) {\n";
    out << "      lm_sum[lm_s] = 0.0f;\n";
    out << "#pragma unroll\n";
    out << "      for (int lm_t = 0; lm_t < LM_CPL; ++lm_t) lm_acc[lm_s][lm_t] = 0.0f;\n";
    out << "    }\n";
    out << "    for (int64_t lm_j0 = lm_lo; lm_j0 < lm_hi; lm_j0 += 32) {\n";
    out << "      lm_stage_keys(lm_j0);\n";
    out << "      float lm_dot[LM_RW];\n";
    out << "      lm_dots(lm_dot);\n";
    out << "      const int64_t lm_j = lm_j0 + lm_lane;\n";
    out << "#pragma unroll\n";
    out << "      for (int lm_s = 0; lm_s < LM_RW; ++lm_s) {\n";
    out << "        const int64_t lm_l = lm_r0 + lm_warp + lm_s * LM_W;\n";
    out << "        float lm_e = 0.0f;\n";
    out << "        if (lm_l < lm_r1 && lm_j < lm_hi && !lm_masked[lm_s])\n";
    out << "          lm_e = lm_expf(" << attention_score("lm_dot[lm_s]") << " - lm_m[lm_s]);\n";
    out << "        lm_sum[lm_s] += lm_e;\n";
    out << "        lm_pw[lm_s * 32 + lm_lane] = lm_e;\n";
    out << "      }\n";
    out << "      __syncthreads();  // every warp's scores are done: lm_kv takes the tile's values\n";
    out << "      for (int lm_x = threadIdx.x; lm_x < 32 * LM_EV; lm_x += blockDim.x) {\n";
    out << "        const int lm_jj = lm_x / LM_EV, lm_c = lm_x % LM_EV;\n";
    out << "        const int64_t lm_jv = lm_j0 + lm_jj;\n";
    out << "        lm_kv[lm_x] = lm_jv < lm_hi ? "
        << attention_load(2, "lm_v[lm_jv * " + expr_text(a.v.row_stride) + " + lm_c * " + expr_text(a.v.col_stride) +
                                 "]")
        << " : 0.0f;\n";
    out << "      }\n";
    out << "      __syncthreads();\n";
    out << "      const int lm_n = (int)lm_imin(32, lm_hi - lm_j0);\n";
    out << "      for (int lm_i = 0; lm_i < lm_n; ++lm_i) {\n";
    out << "#pragma unroll\n";
    out << "        for (int lm_t = 0; lm_t < LM_CPL; ++lm_t) {\n";
    out << "          const int lm_c = lm_lane + 32 * lm_t;\n";
    out << "          const float lm_vv = lm_c < LM_EV ? lm_kv[lm_i * LM_EV + lm_c] : 0.0f;\n";
    out << "#pragma unroll\n";
    out << "          for (int lm_s = 0; lm_s < LM_RW; ++lm_s)\n";
    out << "            lm_acc[lm_s][lm_t] = fmaf(lm_pw[lm_s * 32 + lm_i], lm_vv, lm_acc[lm_s][lm_t]);\n";
    out << "        }\n";
    out << "      }\n";
    out << "    }\n";
    out << "#pragma unroll\n";
    out << "    for (int lm_s = 0; lm_s < LM_RW; ++lm_s) {\n";
    out << "      const float lm_total = lm_warp_reduce(lm_sum[lm_s], lm_sum_op());\n";
    out << "      const int64_t lm_l = lm_r0 + lm_warp + lm_s * LM_W;\n";
    out << "      if (lm_l < lm_r1) {\n";
    out << "#pragma unroll\n";
    out << "        for (int lm_t = 0; lm_t < LM_CPL; ++lm_t) {\n";
    out << "          const int lm_c = lm_lane + 32 * lm_t;\n";
    out << "          if (lm_c < LM_EV) lm_o[lm_l * LM_EV + lm_c] = "
        << table_.store(k_.params[out_param].dtype,
                        "(lm_masked[lm_s] ? lm_acc[lm_s][lm_t] : lm_acc[lm_s][lm_t] / lm_total)")
        << ";\n";
    out << "        }\n";
    out << "      }\n";
    out << "    }\n";
    return out.str();
  }

  // lm_score(l, j): (q·k) * scale + bias for query row l and key j, read from memory.
  std::string score_lambda() const {
    const AttentionSpec& a = k_.attention;
    std::ostringstream out;
    out << "    auto lm_score = [&](const int64_t lm_l, const int64_t lm_j) {\n";
    out << "      const " << attention_storage(0) << "* lm_qr = lm_q + lm_l * " << expr_text(a.q.row_stride) << ";\n";
    out << "      const " << attention_storage(1) << "* lm_kj = lm_k + lm_j * " << expr_text(a.k.row_stride) << ";\n";
    out << "      float lm_dot = 0.0f;\n";
    out << "      for (int64_t lm_d = 0; lm_d < lm_E; ++lm_d)\n";
    out << "        lm_dot = fmaf(" << attention_load(0, "lm_qr[lm_d * " + expr_text(a.q.col_stride) + "]") << ", "
        << attention_load(1, "lm_kj[lm_d * " + expr_text(a.k.col_stride) + "]") << ", lm_dot);\n";
    out << "      return " << attention_score("lm_dot") << ";\n";
    out << "    };\n";
    return out.str();
  }

  // The 32 keys from lm_j0 for row lm_l, on one warp: each lane's exp of its key's score goes
  // into lm_sum, then each exp, broadcast by a shuffle, times that key's value row into lm_acc,
  // the lanes striding the value columns from `first_column`.
  std::string exp_v_tile(int64_t columns_per_lane, const std::string& first_column, const std::string& in) const {
    const AttentionSpec& a = k_.attention;
    std::ostringstream out;
    out << in << "float lm_e = 0.0f;\n";
    out << in << "if (lm_j0 + lm_lane < lm_hi && !lm_masked)\n";
    out << in << "  lm_e = lm_expf(lm_score(lm_l, lm_j0 + lm_lane) - lm_m);\n";
    out << in << "lm_sum += lm_e;\n";
    out << in << "const int lm_n = (int)lm_imin(32, lm_hi - lm_j0);\n";
    out << in << "for (int lm_i = 0; lm_i < lm_n; ++lm_i) {\n";
    out << in << "  const float lm_p = __shfl_sync(0xffffffffu, lm_e, lm_i);\n";
    out << in << "  const " << attention_storage(2) << "* lm_vj = lm_v + (lm_j0 + lm_i) * " << expr_text(a.v.row_stride)
        << ";\n";
    out << "#pragma unroll\n";
    out << in << "  for (int lm_t = 0; lm_t < " << columns_per_lane << "; ++lm_t) {\n";
    out << in << "    const int64_t lm_c = " << first_column << "lm_lane + 32 * lm_t;\n";
    out << in << "    if (lm_c < lm_Ev) lm_acc[lm_t] = fmaf(lm_p, "
        << attention_load(2, "lm_vj[lm_c * " + expr_text(a.v.col_stride) + "]") << ", lm_acc[lm_t]);\n";
    out << in << "  }\n";
    out << in << "}\n";
    return out.str();
  }

  // One query row (a decode step) split over the block's warps: warp w takes the key tiles
  // w, w + warps, ...; the row's max and NaN flag are block reductions, each warp accumulates
  // exp * v over its tiles, and warp 0 adds the warps' sums and outputs in warp order.
  std::string split_keys_attention_loops(int64_t columns_per_lane) const {
    const int out_param = static_cast<int>(k_.params.size()) - 1;
    const std::string cpl = std::to_string(columns_per_lane);
    std::ostringstream out;
    out << score_lambda();
    out << "    const int64_t lm_l = lm_r0;  // the only row\n";
    out << "    float lm_m = -lm_inff();\n";
    out << "    int lm_nan = 0;\n";
    out << "    for (int64_t lm_j = lm_lo + threadIdx.x; lm_j < lm_hi; lm_j += blockDim.x) {\n";
    out << "      const float lm_s = lm_score(lm_l, lm_j);\n";
    out << "      lm_m = lm_s > lm_m ? lm_s : lm_m;\n";
    out << "      lm_nan |= lm_s != lm_s;\n";
    out << "    }\n";
    out << "    lm_m = lm_block_reduce(lm_m, lm_max_op());\n";
    out << "    lm_nan = lm_block_reduce(lm_nan, lm_or_op());\n";
    out << "    if (lm_m == -lm_inff() && lm_nan) lm_m = lm_nanf(\"\");\n";
    out << "    const bool lm_masked = lm_m == -lm_inff();  // every probability is 0\n";
    out << "    float lm_acc[" << cpl << "];\n";
    out << "#pragma unroll\n";
    out << "    for (int lm_t = 0; lm_t < " << cpl << "; ++lm_t) lm_acc[lm_t] = 0.0f;\n";
    out << "    float lm_sum = 0.0f;\n";
    out << "    for (int64_t lm_j0 = lm_lo + 32 * lm_warp; lm_j0 < lm_hi; lm_j0 += blockDim.x) {\n";
    out << exp_v_tile(columns_per_lane, "", "      ");
    out << "    }\n";
    out << "    lm_sum = lm_warp_reduce(lm_sum, lm_sum_op());\n";
    out << "#pragma unroll\n";
    out << "    for (int lm_t = 0; lm_t < " << cpl << "; ++lm_t)\n";
    out << "      lm_parts[lm_warp][lm_t * 32 + lm_lane] = lm_acc[lm_t];\n";
    out << "    if (lm_lane == 0) lm_sums[lm_warp] = lm_sum;\n";
    out << "    __syncthreads();\n";
    out << "    if (lm_warp == 0) {\n";
    out << "      float lm_total = 0.0f;\n";
    out << "      for (int lm_w = 0; lm_w < LM_W; ++lm_w) lm_total += lm_sums[lm_w];\n";
    out << "#pragma unroll\n";
    out << "      for (int lm_t = 0; lm_t < " << cpl << "; ++lm_t) {\n";
    out << "        const int64_t lm_c = lm_lane + 32 * lm_t;\n";
    out << "        float lm_a = 0.0f;\n";
    out << "        for (int lm_w = 0; lm_w < LM_W; ++lm_w) lm_a += lm_parts[lm_w][lm_t * 32 + lm_lane];\n";
    out << "        if (lm_c < lm_Ev) lm_o[lm_l * lm_Ev + lm_c] = "
        << table_.store(k_.params[out_param].dtype, "(lm_masked ? lm_a : lm_a / lm_total)") << ";\n";
    out << "      }\n";
    out << "    }\n";
    out << "    __syncthreads();  // lm_parts is read before the next item writes it\n";
    return out.str();
  }

  std::string per_row_attention_loops() const {
    const AttentionSpec& a = k_.attention;
    const int out_param = static_cast<int>(k_.params.size()) - 1;
    // Registers of output columns per lane: the whole row in one pass for value dims up to 256.
    const int64_t columns_per_lane =
        a.value_dim.is_constant() ? std::clamp<int64_t>((a.value_dim.constant_value() + 31) / 32, 1, 8) : 4;
    const std::string cpl = std::to_string(columns_per_lane);
    std::ostringstream out;
    out << "    const int lm_warps = blockDim.x >> 5;\n";
    out << score_lambda();
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
    out << "      " << attention_storage(out_param) << "* lm_out = lm_o + lm_l * lm_Ev;\n";
    out << "      for (int64_t lm_c0 = 0; lm_c0 < lm_Ev; lm_c0 += " << 32 * columns_per_lane << ") {\n";
    out << "        float lm_acc[" << cpl << "];\n";
    out << "#pragma unroll\n";
    out << "        for (int lm_t = 0; lm_t < " << cpl << "; ++lm_t) lm_acc[lm_t] = 0.0f;\n";
    out << "        float lm_sum = 0.0f;\n";
    out << "        for (int64_t lm_j0 = lm_lo; lm_j0 < lm_hi; lm_j0 += 32) {\n";
    out << exp_v_tile(columns_per_lane, "lm_c0 + ", "          ");
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

  // How a loop over elements is spread: over the grid, over one block, or on one thread in order.
  enum class Spread { Grid, Block, Serial };

  // A loop over every element of `shape` with `body` (using prefix<d>).
  static std::string elements_loop(const ir::Shape& shape, const std::string& prefix, const std::string& body,
                                   Spread spread, const std::string& indent) {
    std::vector<int> dims;
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) dims.push_back(d);
    const char* first = spread == Spread::Grid    ? "(int64_t)blockIdx.x * blockDim.x + threadIdx.x"
                        : spread == Spread::Block ? "threadIdx.x"
                                                  : "0";
    const char* step = spread == Spread::Grid    ? "lm_e += (int64_t)gridDim.x * blockDim.x"
                       : spread == Spread::Block ? "lm_e += blockDim.x"
                                                 : "++lm_e";
    std::string out = indent + "for (int64_t lm_e = " + first + "; lm_e < " + expr_text(ir::numel(shape)) + "; " +
                      step + ") {\n";
    out += decompose(shape, dims, "lm_e", prefix, body, indent + "  ") + body + indent + "}\n";
    return out;
  }

  // A plain scatter updating its data in place (out aliases data: a KV-cache update) spreads
  // its writes over the grid. One that copies data to out first runs on block 0 alone: every
  // write must follow the copy of the element it lands on, and only a block can wait for that.
  // An accumulating scatter (a one-block launch) copies, then scatters on thread 0 in order, so
  // its sums round as the reference's do, duplicates included.
  std::string scatter_body() const {
    const ScatterSpec& s = k_.scatter;
    const DType t = k_.params[0].dtype;
    std::vector<Expr> strides(s.out_shape.size());
    Expr stride(int64_t{1});
    for (int d = static_cast<int>(s.out_shape.size()) - 1; d >= 0; --d) {
      strides[d] = stride;
      stride = stride * s.out_shape[d];
    }
    Index target{Expr(int64_t{0}), {}};
    for (size_t d = 0; d < s.index_shape.size(); ++d)
      target.strides.push_back(static_cast<int>(d) == s.axis ? Expr(int64_t{0}) : strides[d]);
    const std::string extent = expr_text(s.out_shape[s.axis]);
    const std::string src = "p3[" + index_over(s.src, "j") + "]";
    // The body of the loop over index elements, at `in`.
    auto scatter_element = [&](const std::string& in) {
      std::string body = in + "int64_t g = p2[" + index_over(s.index, "j") + "];\n" + in + "if (g < 0 || g >= " +
                         extent + ") { lm_report(lm_info, 1, g, " + extent + "); continue; }\n" + in +
                         "const int64_t o = " + index_over(target, "j") + " + g * " + expr_text(strides[s.axis]) +
                         ";\n";
      if (!s.accumulate) {
        // Duplicate indices: some write wins, as torch.scatter documents (the CPU runtime's is the last).
        return body + in + "p0[o] = " + src + ";\n";
      }
      bool unused = false;
      const std::string sum = table_.op(ir::Op::Add, t, t, {table_.load(t, "p0[o]"), table_.load(t, src)}, unused);
      return body + in + "p0[o] = " + table_.store(t, sum) + ";\n";
    };
    const Index out_index{Expr(int64_t{0}), strides};
    const std::string copy_element = "p0[" + index_over(out_index, "c") + "] = p1[" + index_over(s.data, "c") + "];\n";
    std::string code;
    if (s.accumulate) {  // a one-block launch
      code += "  if ((const void*)p0 != (const void*)p1) {\n" +
              elements_loop(s.out_shape, "c", "      " + copy_element, Spread::Block, "    ") + "  }\n";
      code += "  __syncthreads();\n  if (threadIdx.x == 0) {\n";
      code += elements_loop(s.index_shape, "j", scatter_element("      "), Spread::Serial, "    ");
      code += "  }\n";
      return code;
    }
    code += "  if ((const void*)p0 == (const void*)p1) {\n";
    code += elements_loop(s.index_shape, "j", scatter_element("      "), Spread::Grid, "    ");
    code += "  } else if (blockIdx.x == 0) {\n";
    code += elements_loop(s.out_shape, "c", "      " + copy_element, Spread::Block, "    ");
    code += "    __syncthreads();\n";
    code += elements_loop(s.index_shape, "j", scatter_element("      "), Spread::Block, "    ");
    code += "  }\n";
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
