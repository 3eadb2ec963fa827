// minijax IR: Var, Literal, Eqn, Jaxpr and ClosedJaxpr, mirroring JAX's jaxpr.
// Owns the IR data structures and the text printer in JAX's format.
#pragma once
#include <iosfwd>
#include <memory>
#include <set>
#include <source_location>
#include <string>
#include <variant>
#include <vector>

#include "core/array.h"
#include "core/params.h"

namespace minijax {

struct Primitive;

/// A variable of the IR: identity (pointer) plus its aval. Names are given by the printer.
class Var {
 public:
  Var() = default;
  /// A fresh variable of the given aval.
  explicit Var(ShapedArray aval);
  /// A fresh variable whose value is never used (printed `_`).
  static Var dropvar(ShapedArray aval);
  const ShapedArray& aval() const { return n_->aval; }
  bool is_dropvar() const { return n_ && n_->drop; }
  bool defined() const { return n_ != nullptr; }
  uint64_t id() const { return n_->id; }
  bool operator==(const Var& o) const { return n_ == o.n_; }
  bool operator<(const Var& o) const { return n_ < o.n_; }

 private:
  struct Node {
    ShapedArray aval;
    uint64_t id;
    bool drop;
  };
  std::shared_ptr<Node> n_;
};

struct VarHash {
  size_t operator()(const Var& v) const { return std::hash<uint64_t>()(v.id()); }
};

/// A constant inlined into an equation (a concrete scalar), printed `2.0:f32[]`.
struct Literal {
  Array value;  ///< concrete, size 1
  const ShapedArray& aval() const { return value.aval(); }
};

/// An equation operand: a variable or a literal.
using Atom = std::variant<Var, Literal>;
const ShapedArray& atom_aval(const Atom& a);
/// The variable of an atom, or an undefined Var for literals.
Var atom_var(const Atom& a);

/// Effects of an equation (e.g. "io", "copy", "collective"); ordered by tokens.
using Effects = std::set<std::string>;

/// One equation: outputs = primitive[params](inputs).
struct Eqn {
  const Primitive* primitive = nullptr;
  std::vector<Atom> inputs;
  std::vector<Var> outputs;
  Params params;
  Effects effects;
  /// A collective's (or axis_index's) stable site id in an SPMD program: given by
  /// number_collective_sites (sharding/number_collective_sites.h) after partition_spmd, carried by
  /// every later pass with the equation, and read by lowering into the program's site table; -1
  /// elsewhere. Not printed (the text of a program is unchanged by it).
  int32_t site = -1;
};

/// A jaxpr: `{ lambda constvars ; invars . let eqns in (outvars) }`.
struct Jaxpr {
  std::vector<Var> constvars;
  std::vector<Var> invars;
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;
  Effects effects;

  Jaxpr() = default;
  Jaxpr(const Jaxpr&) = default;
  Jaxpr(Jaxpr&&) noexcept = default;
  Jaxpr& operator=(const Jaxpr&) = default;
  Jaxpr& operator=(Jaxpr&&) noexcept = default;
  /// Frees the nested jaxprs this one alone owns (call, loop and branch bodies) from a worklist,
  /// not by recursion: a 10,000-deep nest of closed_calls is destroyed in constant stack.
  ~Jaxpr();

  std::vector<ShapedArray> in_avals() const;
  std::vector<ShapedArray> out_avals() const;
};
using JaxprPtr = std::shared_ptr<const Jaxpr>;

/// A jaxpr with values for its constvars (concrete arrays or tracers of an enclosing trace).
struct ClosedJaxpr {
  JaxprPtr jaxpr;
  std::vector<Array> consts;

  std::vector<ShapedArray> in_avals() const { return jaxpr->in_avals(); }
  std::vector<ShapedArray> out_avals() const { return jaxpr->out_avals(); }
};

/// Prints in JAX's text format (jax/_src/core.py pp_toplevel_jaxpr, laid out in 80 columns by a
/// Wadler-Lindig printer): `{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul a b in (c,) }` on
/// one line when it fits, otherwise one equation per line indented by 4 and `  in (c,) }`.
/// Variables are named a, b, ..., z, ba, bb, ... in printing order, uniquely across nested
/// jaxprs; unused outputs of top-level equations print as `_`; literals as `2.0:f32[]`; params
/// as `name[k=v k2=v2]` sorted by key (pjit: name= first, body variables named like the
/// equation's operands and results). A jaxpr nested more than once (or nested with more than 10
/// equations) is printed first as `let name = { lambda ... } in` and referenced by name; so is
/// every jaxpr nested a multiple of 16 levels deep, so that printing (and parse_jaxpr reading
/// the text back) recurses a bounded depth however deep the nest. Shared jaxprs are printed
/// innermost first (each `let` uses only names defined above it).
std::string to_string(const Jaxpr& j);
/// The printed form of equation i of j, with the variable names to_string(j) uses.
/// Throws IndexError if i is out of range.
std::string eqn_to_string(const Jaxpr& j, size_t i);
std::string to_string(const ClosedJaxpr& j);
std::ostream& operator<<(std::ostream& os, const Jaxpr& j);
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j);
/// Printed form of a literal operand, as the printer writes it: `2.0:f32[]`, `True:bool[]`.
std::string literal_str(const Literal& l);
/// Printed form of one parameter value (used by the printer and by ParamObject users).
std::string param_to_string(const Param& p);

}  // namespace minijax
