// minijax trace stack: every operation ends in bind(), which finds the innermost trace among its
// inputs and asks it to process the primitive (Autodidax's design). Owns Trace, the stack and bind.
#pragma once
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/params.h"
#include "core/primitive.h"

namespace minijax {

/// One level of the trace stack (eval, staging, JVP, batching, ...). A trace lives while its
/// TraceScope does; its tracers used afterwards raise UnexpectedTracerError.
class Trace : public std::enable_shared_from_this<Trace> {
 public:
  virtual ~Trace() = default;
  int level() const { return level_; }
  bool alive() const { return alive_; }
  /// Short name for messages ("JVPTrace", "JaxprTrace", ...).
  virtual std::string name() const = 0;
  /// Wraps a value of a lower level (concrete, or a tracer of an enclosing trace) as a tracer
  /// of this trace (JAX's pure/lift).
  virtual Array lift(const Array& x) = 0;
  /// Applies p to inputs that are all tracers of this trace (already raised).
  virtual std::vector<Array> process_primitive(const Primitive& p, const std::vector<Array>& in,
                                               const Params& params, std::source_location loc) = 0;
  /// Called when the trace is popped: drop references to its own tracers (which point back to
  /// the trace) so the trace and what it captured are freed.
  virtual void release() {}

 private:
  friend class TraceStack;
  int level_ = 0;
  bool alive_ = true;
};

/// The evaluation trace at level 0: runs the eager implementations.
class EvalTrace final : public Trace {
 public:
  std::string name() const override { return "EvalTrace"; }
  Array lift(const Array& x) override { return x; }
  std::vector<Array> process_primitive(const Primitive& p, const std::vector<Array>& in,
                                       const Params& params, std::source_location loc) override;
};

/// The per-thread stack of traces.
class TraceStack {
 public:
  /// Pushes `t` at the next level. If `dynamic`, t also becomes the dynamic trace: operations on
  /// values of lower levels are staged into it too (make_jaxpr, jit, loop bodies).
  static void push(const std::shared_ptr<Trace>& t, bool dynamic);
  /// Pops t (must be on top) and marks it dead; restores the previous dynamic trace.
  static void pop(const std::shared_ptr<Trace>& t);
  /// The current dynamic trace (the eval trace when none is staging).
  static const std::shared_ptr<Trace>& dynamic();
  /// The level-0 eval trace.
  static const std::shared_ptr<Trace>& eval();
  static int depth();
};

/// Throws ValueError (at `loc`, the user's line that starts the nested trace) when opening one
/// more trace would nest tracing deeper than config().max_trace_depth levels (traces open on
/// this thread, make_jaxpr/jit/closed_call/scan/cond/while/checkpoint/custom rules/grad/vmap
/// all counted), or when max_trace_depth is < 1. trace_to_jaxpr calls it before every trace,
/// so a user function that nests closed_call (or jit, checkpoint, ...) inside itself without
/// end gets this error instead of overflowing the stack.
void check_trace_depth(std::source_location loc);

/// RAII scope of a new trace: constructs T(args...), pushes it, pops it on destruction.
template <class T>
class TraceScope {
 public:
  template <class... A>
  explicit TraceScope(bool dynamic, A&&... args)
      : trace_(std::make_shared<T>(std::forward<A>(args)...)) {
    TraceStack::push(trace_, dynamic);
  }
  ~TraceScope() { TraceStack::pop(trace_); }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  T& operator*() const { return *trace_; }
  T* operator->() const { return trace_.get(); }
  const std::shared_ptr<T>& get() const { return trace_; }

 private:
  std::shared_ptr<T> trace_;
};

/// The trace that must process an operation on `args`: the highest-level live trace among the
/// tracers in args and the dynamic trace. Throws UnexpectedTracerError for dead tracers.
std::shared_ptr<Trace> find_top_trace(const std::vector<Array>& args, std::source_location loc);
/// x as a tracer of `t` (lifting lower-level values). Throws UnexpectedTracerError if x belongs
/// to a higher or dead trace.
Array full_raise(Trace& t, const Array& x, std::source_location loc);

/// Applies primitive p to args through the trace stack. Throws what the shape rule throws
/// (ShapeError/TypeError/ValueError naming p, the operand avals and `loc`).
std::vector<Array> bind(const Primitive& p, const std::vector<Array>& args, const Params& params = {},
                        std::source_location loc = std::source_location::current());
/// bind for single-result primitives.
Array bind1(const Primitive& p, const std::vector<Array>& args, const Params& params = {},
            std::source_location loc = std::source_location::current());
/// bind by primitive name.
Array bind1(const std::string& name, const std::vector<Array>& args, const Params& params = {},
            std::source_location loc = std::source_location::current());

}  // namespace minijax
