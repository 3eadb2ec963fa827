// minijax pytrees: nested C++ containers of Arrays that transformations flatten and rebuild.
// Owns the pytree traits for Array, std::vector, std::array, std::pair, std::tuple,
// std::map<std::string, T>, None (no leaves), MJ_REGISTER_PYTREE for user structs, and the
// leaves' paths (flatten_with_path: `w1`, `layers.0.w`, as flax and torch state dicts key them).
#pragma once
#include <array>
#include <map>
#include <source_location>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/array.h"

namespace minijax {

/// Traits of a pytree type T (specialized below; user structs via MJ_REGISTER_PYTREE):
///   static void flatten(const T&, std::vector<Array>& leaves);    // leaves in order
///   static T unflatten(const T& like, const Array*& next);        // same structure, new leaves
///   static std::string structure(const T&);                       // e.g. "[*, {a: *}]"
///   static void check_same(const T& a, const T& b, loc)           // TypeError if structures differ
///   static void flatten_with_path(const T&, const std::string& prefix, PathLeaves& out)
///       // optional: leaves in flatten order, each with its path (children's keys joined to
///       // `prefix` by '.'); a node without it numbers its leaves (see flatten_with_path below)
template <class T, class = void>
struct pytree;

template <class T>
concept PyTree = requires(const T& t, std::vector<Array>& v) { pytree<T>::flatten(t, v); };

/// Leaves with their paths, in tree_flatten order: what flatten_with_path returns.
using PathLeaves = std::vector<std::pair<std::string, Array>>;

namespace detail {
/// `prefix.key`, or `key` alone at the root (empty prefix).
inline std::string join_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}
/// Appends the leaves of t under `prefix`: through pytree<T>::flatten_with_path when the node
/// defines it, else (a node registered by hand without paths) numbering its leaves 0, 1, ...
/// as JAX's FlattenedIndexKey does.
template <class T>
void flatten_with_path_into(const T& t, const std::string& prefix, PathLeaves& out) {
  if constexpr (requires { pytree<T>::flatten_with_path(t, prefix, out); }) {
    pytree<T>::flatten_with_path(t, prefix, out);
  } else {
    std::vector<Array> leaves;
    pytree<T>::flatten(t, leaves);
    for (size_t i = 0; i < leaves.size(); ++i) out.emplace_back(join_path(prefix, std::to_string(i)), leaves[i]);
  }
}
}  // namespace detail

template <>
struct pytree<Array> {
  static void flatten(const Array& a, std::vector<Array>& out) { out.push_back(a); }
  static void flatten_with_path(const Array& a, const std::string& prefix, PathLeaves& out) {
    out.emplace_back(prefix, a);
  }
  static Array unflatten(const Array&, const Array*& next) { return *next++; }
  static std::string structure(const Array&) { return "*"; }
  static void check_same(const Array&, const Array&, std::source_location) {}
};

/// An empty pytree (JAX's None): no leaves. Used as scan's xs/ys when there are none.
struct None {};

template <>
struct pytree<None> {
  static void flatten(const None&, std::vector<Array>&) {}
  static void flatten_with_path(const None&, const std::string&, PathLeaves&) {}
  static None unflatten(const None&, const Array*&) { return None{}; }
  static std::string structure(const None&) { return "None"; }
  static void check_same(const None&, const None&, std::source_location) {}
};

template <class T>
  requires PyTree<T>
struct pytree<std::vector<T>> {
  static void flatten(const std::vector<T>& v, std::vector<Array>& out) {
    for (auto& x : v) pytree<T>::flatten(x, out);
  }
  static void flatten_with_path(const std::vector<T>& v, const std::string& prefix, PathLeaves& out) {
    for (size_t i = 0; i < v.size(); ++i)
      detail::flatten_with_path_into(v[i], detail::join_path(prefix, std::to_string(i)), out);
  }
  static std::vector<T> unflatten(const std::vector<T>& like, const Array*& next) {
    std::vector<T> r;
    r.reserve(like.size());
    for (auto& x : like) r.push_back(pytree<T>::unflatten(x, next));
    return r;
  }
  static std::string structure(const std::vector<T>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + pytree<T>::structure(v[i]);
    return s + "]";
  }
  static void check_same(const std::vector<T>& a, const std::vector<T>& b, std::source_location loc) {
    if (a.size() != b.size())
      throw TypeError("pytree structures differ: a list of " + std::to_string(a.size()) +
                          " vs a list of " + std::to_string(b.size()) + " (" + structure(a) +
                          " vs " + structure(b) + ")",
                      loc);
    for (size_t i = 0; i < a.size(); ++i) pytree<T>::check_same(a[i], b[i], loc);
  }
};

template <class T, size_t N>
  requires PyTree<T>
struct pytree<std::array<T, N>> {
  static void flatten(const std::array<T, N>& v, std::vector<Array>& out) {
    for (auto& x : v) pytree<T>::flatten(x, out);
  }
  static void flatten_with_path(const std::array<T, N>& v, const std::string& prefix, PathLeaves& out) {
    for (size_t i = 0; i < N; ++i)
      detail::flatten_with_path_into(v[i], detail::join_path(prefix, std::to_string(i)), out);
  }
  static std::array<T, N> unflatten(const std::array<T, N>& like, const Array*& next) {
    std::array<T, N> r;
    for (size_t i = 0; i < N; ++i) r[i] = pytree<T>::unflatten(like[i], next);
    return r;
  }
  static std::string structure(const std::array<T, N>& v) {
    std::string s = "[";
    for (size_t i = 0; i < N; ++i) s += (i ? ", " : "") + pytree<T>::structure(v[i]);
    return s + "]";
  }
  static void check_same(const std::array<T, N>& a, const std::array<T, N>& b, std::source_location loc) {
    for (size_t i = 0; i < N; ++i) pytree<T>::check_same(a[i], b[i], loc);
  }
};

template <class T>
  requires PyTree<T>
struct pytree<std::map<std::string, T>> {
  using M = std::map<std::string, T>;
  static void flatten(const M& m, std::vector<Array>& out) {
    for (auto& [k, v] : m) pytree<T>::flatten(v, out);
  }
  static void flatten_with_path(const M& m, const std::string& prefix, PathLeaves& out) {
    for (auto& [k, v] : m) detail::flatten_with_path_into(v, detail::join_path(prefix, k), out);
  }
  static M unflatten(const M& like, const Array*& next) {
    M r;
    for (auto& [k, v] : like) r.emplace(k, pytree<T>::unflatten(v, next));
    return r;
  }
  static std::string structure(const M& m) {
    std::string s = "{";
    bool first = true;
    for (auto& [k, v] : m) {
      s += (first ? "" : ", ") + k + ": " + pytree<T>::structure(v);
      first = false;
    }
    return s + "}";
  }
  static void check_same(const M& a, const M& b, std::source_location loc) {
    auto ia = a.begin();
    auto ib = b.begin();
    for (; ia != a.end() && ib != b.end(); ++ia, ++ib) {
      if (ia->first != ib->first) break;
      pytree<T>::check_same(ia->second, ib->second, loc);
    }
    if (ia != a.end() || ib != b.end())
      throw TypeError("pytree structures differ: dicts with keys " + structure(a) + " vs " +
                          structure(b),
                      loc);
  }
};

template <class... Ts>
  requires(PyTree<Ts> && ...)
struct pytree<std::tuple<Ts...>> {
  using T = std::tuple<Ts...>;
  static void flatten(const T& t, std::vector<Array>& out) {
    std::apply([&](const auto&... x) { (pytree<std::decay_t<decltype(x)>>::flatten(x, out), ...); }, t);
  }
  static void flatten_with_path(const T& t, const std::string& prefix, PathLeaves& out) {
    size_t i = 0;
    std::apply([&](const auto&... x) {
      (detail::flatten_with_path_into(x, detail::join_path(prefix, std::to_string(i++)), out), ...);
    }, t);
  }
  static T unflatten(const T& like, const Array*& next) {
    return std::apply(
        [&](const auto&... x) { return T{pytree<std::decay_t<decltype(x)>>::unflatten(x, next)...}; },
        like);
  }
  static std::string structure(const T& t) {
    std::string s = "(";
    bool first = true;
    std::apply([&](const auto&... x) {
      ((s += (first ? "" : ", ") + pytree<std::decay_t<decltype(x)>>::structure(x), first = false), ...);
    }, t);
    return s + ")";
  }
  static void check_same(const T& a, const T& b, std::source_location loc) {
    check_impl(a, b, loc, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static void check_impl(const T& a, const T& b, std::source_location loc, std::index_sequence<I...>) {
    (pytree<std::tuple_element_t<I, T>>::check_same(std::get<I>(a), std::get<I>(b), loc), ...);
  }
};

template <class A, class B>
  requires(PyTree<A> && PyTree<B>)
struct pytree<std::pair<A, B>> {
  using T = std::pair<A, B>;
  static void flatten(const T& t, std::vector<Array>& out) {
    pytree<A>::flatten(t.first, out);
    pytree<B>::flatten(t.second, out);
  }
  static void flatten_with_path(const T& t, const std::string& prefix, PathLeaves& out) {
    detail::flatten_with_path_into(t.first, detail::join_path(prefix, "0"), out);
    detail::flatten_with_path_into(t.second, detail::join_path(prefix, "1"), out);
  }
  static T unflatten(const T& like, const Array*& next) {
    A a = pytree<A>::unflatten(like.first, next);
    B b = pytree<B>::unflatten(like.second, next);
    return T{std::move(a), std::move(b)};
  }
  static std::string structure(const T& t) {
    return "(" + pytree<A>::structure(t.first) + ", " + pytree<B>::structure(t.second) + ")";
  }
  static void check_same(const T& a, const T& b, std::source_location loc) {
    pytree<A>::check_same(a.first, b.first, loc);
    pytree<B>::check_same(a.second, b.second, loc);
  }
};

/// Leaves of a pytree in order.
template <class T>
std::vector<Array> tree_flatten(const T& t) {
  std::vector<Array> out;
  pytree<T>::flatten(t, out);
  return out;
}

/// The leaves of a pytree in tree_flatten order, each with its path: the keys from the root to
/// the leaf joined by '.' (JAX's jax.tree_util.tree_flatten_with_path, with paths written as
/// flax's and torch's state-dict keys): a registered struct's field name, a vector's, array's,
/// tuple's or pair's index (0, 1, ...) and a std::map's key. So {w1, layers: [{w}, {w}]} gives
/// `w1`, `layers.0.w`, `layers.1.w`; optim::AdamState<P> gives `mu.<path>`, `nu.<path>`, `step`.
/// A pytree that is a single Array has the empty path "". A node whose traits lack
/// flatten_with_path numbers its leaves under its own path. Paths are not checked for
/// uniqueness here (a map key holding '.' can repeat another path); the savers check.
template <class T>
PathLeaves flatten_with_path(const T& t) {
  PathLeaves out;
  detail::flatten_with_path_into(t, "", out);
  return out;
}

/// JAX's spelling of flatten_with_path (jax.tree_util.tree_flatten_with_path), paths as strings.
template <class T>
PathLeaves tree_flatten_with_path(const T& t) { return flatten_with_path(t); }

/// A pytree with the structure of `like` and the given leaves. Throws TypeError if the number of
/// leaves differs.
template <class T>
T tree_unflatten(const T& like, const std::vector<Array>& leaves,
                 std::source_location loc = std::source_location::current()) {
  std::vector<Array> probe;
  pytree<T>::flatten(like, probe);
  if (probe.size() != leaves.size())
    throw TypeError("tree_unflatten: structure " + pytree<T>::structure(like) + " has " +
                        std::to_string(probe.size()) + " leaves, got " + std::to_string(leaves.size()),
                    loc);
  const Array* next = leaves.data();
  return pytree<T>::unflatten(like, next);
}

/// The printed structure of a pytree, leaves as `*`.
template <class T>
std::string tree_structure(const T& t) { return pytree<T>::structure(t); }

/// Throws TypeError naming both structures if a and b differ in structure.
template <class T>
void tree_check_same(const T& a, const T& b, std::source_location loc = std::source_location::current()) {
  pytree<T>::check_same(a, b, loc);
}

/// f applied to every leaf.
template <class T, class F>
T tree_map(F&& f, const T& t) {
  auto leaves = tree_flatten(t);
  for (auto& l : leaves) l = f(l);
  return tree_unflatten(t, leaves);
}

/// f applied leafwise to two trees of the same structure (TypeError otherwise).
template <class T, class F>
T tree_map(F&& f, const T& a, const T& b, std::source_location loc = std::source_location::current()) {
  tree_check_same(a, b, loc);
  auto la = tree_flatten(a), lb = tree_flatten(b);
  for (size_t i = 0; i < la.size(); ++i) la[i] = f(la[i], lb[i]);
  return tree_unflatten(a, la);
}

namespace detail {
template <class S, class... M>
struct struct_pytree {
  template <class Tup>
  static void flatten_fields(const S& s, std::vector<Array>& out, const Tup& members) {
    std::apply([&](auto... m) { (pytree<std::decay_t<decltype(s.*m)>>::flatten(s.*m, out), ...); }, members);
  }
  template <class Tup>
  static S unflatten_fields(const S& like, const Array*& next, const Tup& members) {
    S r = like;
    std::apply([&](auto... m) { ((r.*m = pytree<std::decay_t<decltype(like.*m)>>::unflatten(like.*m, next)), ...); },
               members);
    return r;
  }
  template <class Tup>
  static void flatten_fields_with_path(const S& s, const std::string& prefix, PathLeaves& out,
                                       const Tup& members, const std::vector<std::string>& names) {
    size_t i = 0;
    std::apply([&](auto... m) {
      (flatten_with_path_into(s.*m, join_path(prefix, names[i++]), out), ...);
    }, members);
  }
};

/// The field names of MJ_REGISTER_PYTREE's stringified list ("w, b" -> {"w", "b"}).
inline std::vector<std::string> split_field_names(const char* list) {
  std::vector<std::string> names(1);
  for (const char* c = list; *c; ++c) {
    if (*c == ',') names.emplace_back();
    else if (*c != ' ' && *c != '\t' && *c != '\n') names.back() += *c;
  }
  return names;
}
}  // namespace detail

}  // namespace minijax

// MJ_PT_MEMBERS_(T, a, b, c) -> `&T::a, &T::b, &T::c`, for up to MJ_PT_MAX_FIELDS_ fields.
// MJ_PT_EACH_ writes the head's member pointer and defers itself on the tail: MJ_PT_NEXT_ meets
// its parentheses only at the next scan, so each scan of MJ_PT_SCAN_'s argument handles one more
// field. MJ_PT_SCAN_ nests 4 levels of 4 macros (4^4 scans, and the scans of their arguments):
// 342 fields, at a cost of a few milliseconds per use whatever the count. Past that an
// unexpanded MJ_PT_NEXT_ would remain: MJ_REGISTER_PYTREE counts the fields first and names the
// limit in one static_assert.
#define MJ_PT_MAX_FIELDS_ 342
#define MJ_PT_SCAN_(...) MJ_PT_SCAN3_(MJ_PT_SCAN3_(MJ_PT_SCAN3_(MJ_PT_SCAN3_(__VA_ARGS__))))
#define MJ_PT_SCAN3_(...) MJ_PT_SCAN2_(MJ_PT_SCAN2_(MJ_PT_SCAN2_(MJ_PT_SCAN2_(__VA_ARGS__))))
#define MJ_PT_SCAN2_(...) MJ_PT_SCAN1_(MJ_PT_SCAN1_(MJ_PT_SCAN1_(MJ_PT_SCAN1_(__VA_ARGS__))))
#define MJ_PT_SCAN1_(...) MJ_PT_SCAN0_(MJ_PT_SCAN0_(MJ_PT_SCAN0_(MJ_PT_SCAN0_(__VA_ARGS__))))
#define MJ_PT_SCAN0_(...) __VA_ARGS__
#define MJ_PT_EMPTY_()
#define MJ_PT_NEXT_() MJ_PT_EACH_
#define MJ_PT_EACH_(T, f, ...) &T::f __VA_OPT__(, MJ_PT_NEXT_ MJ_PT_EMPTY_() () (T, __VA_ARGS__))
#define MJ_PT_MEMBERS_(T, ...) MJ_PT_SCAN_(MJ_PT_EACH_(T, __VA_ARGS__))

namespace minijax::detail {
/// The number of fields in MJ_REGISTER_PYTREE's stringified list ("w, b" -> 2).
constexpr size_t count_fields(const char* list) {
  size_t n = 1;
  for (const char* c = list; *c; ++c) n += *c == ',';
  return n;
}
}  // namespace minijax::detail

/// Registers a user struct as a pytree node whose children are the listed fields (any number up
/// to 342, MJ_PT_MAX_FIELDS_; more is a static_assert naming the limit), each itself a pytree;
/// the field names are recorded as the children's keys in flatten_with_path (`Params{w, b}` ->
/// paths `w`, `b`). Use at global namespace scope:
///   struct Params { mj::Array w, b; };  MJ_REGISTER_PYTREE(Params, w, b)
/// Fields not listed are not part of the tree: flattening skips them, and unflattening copies
/// them from the structure it rebuilds (under mj::jit, the value the function was traced with),
/// so a jitted function sees an unlisted field's first value on every call. List every field,
/// or pass what is not an Array as its own (static) argument.
#define MJ_REGISTER_PYTREE(Type, ...)                                                              \
  template <>                                                                                      \
  struct minijax::pytree<Type> {                                                                   \
    static_assert(minijax::detail::count_fields(#__VA_ARGS__) <= MJ_PT_MAX_FIELDS_,                \
                  "MJ_REGISTER_PYTREE takes at most 342 fields (MJ_PT_MAX_FIELDS_)");             \
    using mj_self_type = ::Type; /* global lookup: a user type named like a minijax type */       \
    static auto members() { return std::make_tuple(MJ_PT_MEMBERS_(mj_self_type, __VA_ARGS__)); }  \
    static const std::vector<std::string>& field_names() {                                         \
      static const std::vector<std::string> names = minijax::detail::split_field_names(#__VA_ARGS__); \
      return names;                                                                                \
    }                                                                                              \
    static void flatten_with_path(const mj_self_type& s, const std::string& prefix,                \
                                  minijax::PathLeaves& out) {                                      \
      minijax::detail::struct_pytree<mj_self_type>::flatten_fields_with_path(s, prefix, out, members(), \
                                                                             field_names());       \
    }                                                                                              \
    static void flatten(const mj_self_type& s, std::vector<minijax::Array>& out) {                         \
      minijax::detail::struct_pytree<mj_self_type>::flatten_fields(s, out, members());                     \
    }                                                                                              \
    static mj_self_type unflatten(const mj_self_type& like, const minijax::Array*& next) {                         \
      return minijax::detail::struct_pytree<mj_self_type>::unflatten_fields(like, next, members());        \
    }                                                                                              \
    static std::string structure(const mj_self_type& s) {                                                  \
      std::string r = #Type "(";                                                                   \
      bool first = true;                                                                           \
      std::apply([&](auto... m) {                                                                  \
        ((r += (first ? "" : ", ") + minijax::pytree<std::decay_t<decltype(s.*m)>>::structure(s.*m), \
          first = false), ...);                                                                    \
      }, members());                                                                               \
      return r + ")";                                                                              \
    }                                                                                              \
    static void check_same(const mj_self_type& a, const mj_self_type& b, std::source_location loc) {               \
      std::apply([&](auto... m) {                                                                  \
        (minijax::pytree<std::decay_t<decltype(a.*m)>>::check_same(a.*m, b.*m, loc), ...);         \
      }, members());                                                                               \
    }                                                                                              \
  };
