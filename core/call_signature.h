// minijax call signatures: what identifies one call of a traced function (jit, checkpoint) in a
// trace cache. Owns StaticKey (hashable static values), Signature and the pytree-structure words.
#pragma once
#include <array>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "core/aval.h"
#include "core/pytree.h"

namespace minijax {

struct ShapeDtypeStruct;  // jit/jit.h: an abstract argument, a leaf like Array

namespace detail {

/// A static argument's identity in a signature cache (a Jit's, a checkpoint's, the shared trace
/// cache): its hash, type and a copy for ==.
struct StaticKey {
  size_t hash = 0;
  const std::type_info* type = nullptr;
  std::shared_ptr<const void> value;
  bool (*equal)(const void*, const void*) = nullptr;
  bool operator==(const StaticKey& o) const {
    return hash == o.hash && *type == *o.type && equal(value.get(), o.value.get());
  }
};

/// What "hashable" means for a static argument (jit's static_argnums and checkpoint's): the type
/// has std::hash and operator==. Such values are keyed by value (floating-point ones by their
/// bits, see static_key), as JAX keys static arguments by hash and ==.
template <class T>
concept StaticArgument = requires(const T& a, const T& b) {
  { std::hash<T>{}(a) } -> std::convertible_to<size_t>;
  { a == b } -> std::convertible_to<bool>;
};

/// A static argument's value as the cache keys it: C strings (string literals) by their text,
/// everything else as it is.
template <class T>
decltype(auto) static_value(const T& v) {
  if constexpr (std::is_array_v<T> || std::is_same_v<std::decay_t<T>, const char*> || std::is_same_v<std::decay_t<T>, char*>)
    return std::string(v);
  else
    return (v);
}

template <class T>
StaticKey static_key(const T& v) {
  static_assert(StaticArgument<T>,
                "mj::jit: a static argument (not a pytree of Arrays, or named in static_argnums) must "
                "have std::hash and operator== (it is part of the compile cache key, as in JAX)");
  StaticKey k;
  k.type = &typeid(T);
  k.value = std::make_shared<const T>(v);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // By their bits: -0.0 and 0.0 (equal under ==) give different programs (x / s), and a NaN
    // (never == itself) must find its own entry again.
    k.hash = std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(&v), sizeof(T)));
    k.equal = [](const void* a, const void* b) { return std::memcmp(a, b, sizeof(T)) == 0; };
  } else {
    k.hash = std::hash<T>{}(v);
    k.equal = [](const void* a, const void* b) { return *static_cast<const T*>(a) == *static_cast<const T*>(b); };
  }
  return k;
}

/// The signature of one call, the key of a Jit's cache and (with the callable's identity) of the
/// shared trace cache (core/trace_cache.h): per positional argument its C++ type and
/// pytree structure (container sizes; dict keys and the structure strings of user pytree types
/// in `text`) or its static value's hash, then per Array leaf its dtype, weak type, memory kind,
/// shape and, for a sharded Array, its mesh and sharding (in `text`). Built without formatting
/// text for the common containers and Arrays, so a cache hit costs well under a microsecond per
/// leaf; static values are compared with == beside it (CallArgs::statics).
struct Signature {
  std::vector<uint64_t> words;
  std::string text;
  size_t hash = 0;
  /// Computes `hash` from words and text (call once, after filling them).
  void finish();
  bool operator==(const Signature& o) const { return hash == o.hash && words == o.words && text == o.text; }
};
struct SignatureHash {
  size_t operator()(const Signature& s) const { return s.hash; }
};

template <class T>
struct is_std_vector : std::false_type {};
template <class T>
struct is_std_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_std_pair : std::false_type {};
template <class A, class B>
struct is_std_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_std_tuple : std::false_type {};
template <class... T>
struct is_std_tuple<std::tuple<T...>> : std::true_type {};
template <class T>
struct is_string_map : std::false_type {};
template <class T>
struct is_string_map<std::map<std::string, T>> : std::true_type {};
/// A struct registered with MJ_REGISTER_PYTREE (its fields are listed by members()).
template <class T>
concept RegisteredStruct = requires { pytree<T>::members(); };

/// Appends the structure of pytree `a` (of static type T) to `s`: nothing for a leaf, the size of
/// a vector or dict (and the dict's keys), the children of containers and registered structs in
/// order, and the structure() string of any other pytree type. Unambiguous given T.
template <class T>
void append_structure(const T& a, Signature& s) {
  if constexpr (std::is_same_v<T, Array> || std::is_same_v<T, None> || std::is_same_v<T, ShapeDtypeStruct>) {
  } else if constexpr (is_std_vector<T>::value) {
    s.words.push_back(a.size());
    for (auto& x : a) append_structure(x, s);
  } else if constexpr (is_std_array<T>::value) {
    for (auto& x : a) append_structure(x, s);
  } else if constexpr (is_std_pair<T>::value) {
    append_structure(a.first, s);
    append_structure(a.second, s);
  } else if constexpr (is_std_tuple<T>::value) {
    std::apply([&](const auto&... x) { (append_structure(x, s), ...); }, a);
  } else if constexpr (is_string_map<T>::value) {
    s.words.push_back(a.size());
    for (auto& [k, v] : a) {
      s.words.push_back(k.size());
      s.text += k;
      append_structure(v, s);
    }
  } else if constexpr (RegisteredStruct<T>) {
    std::apply([&](auto... m) { (append_structure(a.*m, s), ...); }, pytree<T>::members());
  } else {
    const std::string st = pytree<T>::structure(a);
    s.words.push_back(st.size());
    s.text += st;
  }
}

/// Appends one word per aval (dtype, weak type, memory kind, rank) and its dimensions to `sig`:
/// the leaf part of a checkpoint's signature (its trace depends on the avals alone).
void append_aval_signature(Signature& sig, const std::vector<ShapedArray>& avals);

}  // namespace detail
}  // namespace minijax
