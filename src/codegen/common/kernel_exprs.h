// The target-independent half of emitting a FusedKernel: validation, and its expr DAG as `const`
// temporaries placed in the scope each needs. Each kernel emitter (CPU, CUDA) writes the loops
// and stores around it.
//
// Names the emitted code uses, which the surrounding loops must define:
//   b<k>    buffer k, as a pointer to storage_c_type (const for inputs)
//   o<d>    outer loop index d;  i<d>: inner loop index d (both of index_c_type())
//   row<r>  reduction r's result, in compute_c_type of its accumulator
//   t<id>   the temporary holding expr id
#pragma once

#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "codegen/common/scalar_emitter.h"
#include "fusion/kernel_ir.h"
#include "graphfuse/graph.h"

namespace gf::codegen {

// One line of a // comment: no newline, no trailing backslash (it would continue the comment).
std::string comment_safe(std::string s);
bool is_c_identifier(const std::string& s);
std::string dims_string(const std::vector<int64_t>& dims);

class KernelExprWriter {
 public:
  // Validates `kernel`: kInvalidGraph naming the kernel for a malformed one (args not earlier,
  // bad axes or buffers, a store to an input, a per-outer store that reads an inner index, a
  // reduction reading its own row), kUnsupported for a bool accumulator. The kernel, graph and
  // target must outlive the writer.
  KernelExprWriter(const fusion::FusedKernel& kernel, const Graph& graph, const Target& target,
                   bool round_16bit_intermediates);

  const fusion::Expr& expr(fusion::ExprId id) const {
    return kernel_.exprs[static_cast<size_t>(id)];
  }
  bool uses_inner(fusion::ExprId id) const { return uses_inner_[static_cast<size_t>(id)]; }
  static std::string tmp(fusion::ExprId id) { return "t" + std::to_string(id); }
  // tmp(id) converted to `t`.
  std::string as_type(fusion::ExprId id, DType t) const;

  // 32-bit index arithmetic: the loop indices are int32_t, and so is every index expr whose
  // range (index_ranges) fits; the others stay int64_t. Only for kernels that
  // fits_32bit_indexing allows (kInvalidArgument otherwise). Off by default.
  void set_index32(bool on);
  bool index32() const { return index32_; }
  std::string index_c_type() const { return index32_ ? "int32_t" : "int64_t"; }
  // An index expr's temporary as an array subscript (no widening for a narrowed one).
  std::string index_ref(fusion::ExprId id) const;

  // From now on, the load `load` reads the stored value (storage_c_type) `stored` instead of
  // b<k>[index]; its index exprs are then not written. Cleared by clear_load_sources.
  void set_load_source(fusion::ExprId load, std::string stored) {
    load_source_[load] = std::move(stored);
  }
  // From now on, `id` is the compute-typed value `value` (an element of a register array that an
  // earlier pass filled); its args are then not written. Cleared by clear_load_sources.
  void set_value_source(fusion::ExprId id, std::string value) {
    value_source_[id] = std::move(value);
  }
  void clear_load_sources() {
    load_source_.clear();
    value_source_.clear();
  }
  void clear_load_source(fusion::ExprId load) { load_source_.erase(load); }
  void clear_value_source(fusion::ExprId id) { value_source_.erase(id); }
  bool has_source(fusion::ExprId id) const {
    return load_source_.count(id) > 0 || value_source_.count(id) > 0;
  }

  // Whether op `id` rounds its 16-bit result where it is computed (a conversion there).
  bool rounds_where_computed(fusion::ExprId id) const;
  // From now on, op `id` is written without its per-op rounding: the caller rounds it (several
  // values per conversion) and hands the rounded value on with set_value_source. Undone by
  // clear_unrounded.
  void set_unrounded(fusion::ExprId id) { unrounded_.insert(id); }
  void clear_unrounded() { unrounded_.clear(); }

  // Writes the exprs among `roots` and their args that live at this level (`inner`: those that
  // use an inner index, else the outer-invariant ones) and are not in `done`; adds them to it.
  // Only row values below `rows_ready` may be read (else kInvalidGraph).
  void emit(std::ostream& out, const std::vector<fusion::ExprId>& roots, bool inner,
            std::set<fusion::ExprId>& done, const std::string& indent, size_t rows_ready) const;

  // `b<k>[index] = value;` for a store whose exprs are emitted.
  std::string store_statement(const fusion::Store& store) const;
  // The value of a store converted to the buffer's storage type.
  std::string store_value(const fusion::Store& store) const;
  // Whether a store into a bf16 buffer holds values bf16 represents already (store_value is then
  // a shift of the float's bits, not a rounding).
  bool stores_exact_bf16(const fusion::Store& store) const;
  // Whether the 16-bit-typed expression `id` holds a value its format represents exactly (a load,
  // a cast or constant, a per-op-rounded result), so storing it needs no rounding.
  bool holds_exact_16bit(fusion::ExprId id) const;
  // Whether op `e` gives a value its 16-bit format holds exactly whenever its args do (sign,
  // magnitude and selection ops: Relu, Abs, Neg, Max, Min, Sign, Floor, Ceil, Round, Identity),
  // so a per-op rounding of it would change nothing.
  bool exact_on_exact_args(const fusion::Expr& e) const;

  // A reduction's identity in its accumulator type, and `a` combined with `b` (each argument
  // appears once in the result): wrapping for integers, NaN-propagating for max/min.
  std::string reduction_identity(size_t r) const;
  std::string reduction_combine(size_t r, const std::string& a, const std::string& b) const;

 private:
  [[noreturn]] void malformed(const std::string& why) const;
  void validate_and_analyse();
  void find_results_rounded_by_store();
  // Whether op `id`'s 16-bit result is rounded where it is computed (round_16bit_intermediates,
  // unless only its stores read it).
  bool rounds_per_op(fusion::ExprId id) const;
  std::string expr_value(fusion::ExprId id) const;
  std::string op_value(fusion::ExprId id) const;
  std::string index_value(fusion::ExprId id) const;

  const fusion::FusedKernel& kernel_;
  const Graph& graph_;
  const Target& target_;
  bool round_16bit_;
  // Per expr: a 16-bit op result that only stores of its own format read. Their conversion rounds
  // it, so a per-op rounding before would only repeat it.
  std::vector<bool> rounded_by_store_;
  std::vector<bool> uses_inner_;  // per expr: depends on an inner loop index
  std::vector<int> max_row_;      // per expr: the highest row value it reads, -1 for none
  bool index32_ = false;
  std::vector<bool> narrow_;  // per expr: computed as int32_t
  mutable std::vector<int8_t> exact_16bit_;  // per expr: holds_exact_16bit, -1 until asked
  std::map<fusion::ExprId, std::string> load_source_;
  std::map<fusion::ExprId, std::string> value_source_;
  std::set<fusion::ExprId> unrounded_;
};

}  // namespace gf::codegen
