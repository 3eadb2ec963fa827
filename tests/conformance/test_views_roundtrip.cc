// minijax typed views over the conformance corpus: every equation's params fit its primitive's
// view (check_params), and each array-op view gives back exactly the params it read.
// Owns the corpus round trip of core/views/ (traced, jit, jvp and vjp jaxprs, printed and parsed back).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "conformance.h"
#include "core/parser.h"
#include "core/views/array_ops.h"
#include "core/views/linalg.h"
#include "core/views/sorting.h"

namespace {

using conformance::Case;
using conformance::registry;
using mj::Array;
using mj::Params;

using RoundTrip = std::function<Params(const Params&)>;

template <class View>
RoundTrip rt() {
  return [](const Params& p) { return View::from(p).to_params(); };
}
template <class View>
RoundTrip rt_named(const char* name) {
  return [name](const Params& p) { return View::from(p, name).to_params(); };
}

// from(params).to_params() of each array-op view, by primitive.
const std::map<std::string, RoundTrip>& round_trips() {
  static const std::map<std::string, RoundTrip> t = {
      {"broadcast_in_dim", rt<mj::BroadcastInDimParams>()},
      {"reshape", rt<mj::ReshapeParams>()},
      {"squeeze", rt<mj::SqueezeParams>()},
      {"expand_dims", rt<mj::ExpandDimsParams>()},
      {"rev", rt<mj::RevParams>()},
      {"transpose", rt<mj::TransposeParams>()},
      {"slice", rt<mj::SliceParams>()},
      {"dynamic_slice", rt<mj::DynamicSliceParams>()},
      {"dynamic_update_slice", rt<mj::DynamicUpdateSliceParams>()},
      {"concatenate", rt<mj::ConcatenateParams>()},
      {"pad", rt<mj::PadParams>()},
      {"gather", rt<mj::GatherParams>()},
      {"scatter_add", rt<mj::ScatterParams>()},
      {"dot_general", rt<mj::DotGeneralParams>()},
      {"reduce_sum", rt_named<mj::ReduceParams>("reduce_sum")},
      {"reduce_max", rt_named<mj::ReduceParams>("reduce_max")},
      {"reduce_min", rt_named<mj::ReduceParams>("reduce_min")},
      {"reduce_prod", rt_named<mj::ReduceParams>("reduce_prod")},
      {"argmax", rt_named<mj::ArgReduceParams>("argmax")},
      {"argmin", rt_named<mj::ArgReduceParams>("argmin")},
      {"cumsum", rt<mj::CumsumParams>()},
      {"reduce_and", rt_named<mj::ReduceParams>("reduce_and")},
      {"reduce_or", rt_named<mj::ReduceParams>("reduce_or")},
      {"reduce_xor", rt_named<mj::ReduceParams>("reduce_xor")},
      {"cumprod", rt_named<mj::CumulativeParams>("cumprod")},
      {"cummax", rt_named<mj::CumulativeParams>("cummax")},
      {"cummin", rt_named<mj::CumulativeParams>("cummin")},
      {"cumlogsumexp", rt_named<mj::CumulativeParams>("cumlogsumexp")},
      {"iota", rt<mj::IotaParams>()},
      {"convert_element_type", rt<mj::ConvertElementTypeParams>()},
      {"round", rt<mj::RoundParams>()},
      {"integer_pow", rt<mj::IntegerPowParams>()},
      {"iota_2x32_shape", rt<mj::Iota2x32ShapeParams>()},
      {"bitcast_convert_type", rt<mj::BitcastConvertTypeParams>()},
      {"sort", rt<mj::SortParams>()},
      {"top_k", rt<mj::TopKParams>()},
      {"triangular_solve", rt<mj::TriangularSolveParams>()},
      {"qr", rt<mj::QrParams>()},
      {"eigh", rt<mj::EighParams>()},
      {"svd", rt<mj::SvdParams>()},
  };
  return t;
}

struct Walk {
  std::set<std::string> seen;    // array-op primitives round-tripped through their view's table
  std::set<std::string> viewed;  // primitives round-tripped through check_params
  int eqns = 0, reparsed = 0, unparsed = 0;

  // Every equation of `j` and of the jaxprs in its params.
  void jaxpr(const mj::Jaxpr& j, const std::string& where) {
    for (const mj::Eqn& e : j.eqns) {
      ++eqns;
      const std::string& n = e.primitive->name;
      if (e.primitive->check_params) {
        // Every typed view (control flow, calls, array ops, collectives, copies...): what it
        // writes back is what it read.
        viewed.insert(n);
        try {
          EXPECT_TRUE(e.primitive->check_params(e.params) == e.params)
              << where << ": " << n << " params do not round-trip through its typed view";
        } catch (const mj::Error& err) {
          ADD_FAILURE() << where << ": " << n << ": " << err.what();
        }
      }
      auto it = round_trips().find(n);
      if (it != round_trips().end()) {
        seen.insert(n);
        EXPECT_TRUE(it->second(e.params) == e.params)
            << where << ": " << n << " params do not round-trip through its view";
      }
      for (auto& [k, v] : e.params.items()) {
        if (auto* cj = std::get_if<mj::ClosedJaxprPtr>(&v); cj && *cj) jaxpr(*(*cj)->jaxpr, where);
        if (auto* cjs = std::get_if<std::vector<mj::ClosedJaxprPtr>>(&v))
          for (auto& b : *cjs) jaxpr(*b->jaxpr, where);
      }
    }
  }

  // `cj`, and the same jaxpr printed and parsed back.
  void closed(const mj::ClosedJaxpr& cj, const std::string& where) {
    jaxpr(*cj.jaxpr, where);
    auto j = std::make_shared<mj::Jaxpr>(*cj.jaxpr);
    j->invars.insert(j->invars.begin(), j->constvars.begin(), j->constvars.end());
    j->constvars.clear();
    // Some printed params do not read back (a sharding_constraint's mesh-bound sharding): those
    // jaxprs are walked as traced only.
    std::optional<mj::ClosedJaxpr> parsed;
    try {
      parsed = mj::parse_jaxpr(mj::to_string(*j));
    } catch (const mj::Error& err) {
      if (unparsed < 20) std::cout << "not parseable: " << where << ": " << err.message().substr(0, 160) << "\n";
      ++unparsed;
      return;
    }
    ++reparsed;
    jaxpr(*parsed->jaxpr, where + " (parsed)");
  }
};

// One case traced plain, under jit, and (differentiable float cases) its jvp and vjp.
void walk_case(Walk& w, const Case& k) {
  const std::string where = k.prim + (k.label.empty() ? "" : "/" + k.label);
  for (auto& [form, j] : conformance::traced_jaxprs(k)) w.closed(j, form.empty() ? where : where + " " + form);
}

}  // namespace

// Every equation of every conformance case (plain, jit, jvp, vjp; as traced and as printed and
// parsed back) round-trips through its primitive's typed view (check_params: from, then
// to_params, operator== so printing is unchanged). Every array-op view is exercised.
TEST(TypedViews, RoundTripEveryEquationOfTheConformanceCorpus) {
  Walk w;
  for (const Case& k : registry()) walk_case(w, k);
  std::cout << registry().size() << " cases, " << w.eqns << " equations walked, " << w.reparsed
            << " jaxprs parsed back, " << w.unparsed << " not parseable, " << w.seen.size()
            << " array-op primitives round-tripped\n";
  EXPECT_GT(w.eqns, 1000);
  EXPECT_GT(w.reparsed, 10 * w.unparsed) << w.unparsed << " printed jaxprs did not parse back";
  for (auto& [n, f] : round_trips()) EXPECT_TRUE(w.seen.count(n)) << n << " appears in no corpus equation";
  EXPECT_EQ(round_trips().size(), mj::views::array_op_primitive_names().size());
  // Every primitive the corpus exercises has a typed view, except those whose params nothing
  // reads outside their definition (no params, or only the elementwise family's none).
  std::cout << w.viewed.size() << " primitives round-tripped through their typed view\n";
  for (const char* n : {"scan", "while", "cond", "pjit", "checkpoint", "broadcast_in_dim", "reshape",
                        "dot_general", "gather", "reduce_sum", "cumsum", "device_put"})
    EXPECT_TRUE(w.viewed.count(n)) << n << " was not round-tripped through its typed view";
}

// The parser's seed corpus (tests/fuzz/corpus/parser: printed jaxprs of the cases and fuzzer
// finds): every file that parses has params that fit their views and round-trip through them.
TEST(TypedViews, RoundTripEveryParsedSeedOfTheParserCorpus) {
  Walk w;
  int files = 0;
  for (auto& f : std::filesystem::directory_iterator(std::string(MINIJAX_SOURCE_DIR) + "/tests/fuzz/corpus/parser")) {
    std::ifstream in(f.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::optional<mj::ClosedJaxpr> cj;
    try {
      cj = mj::parse_jaxpr(text);
    } catch (const mj::Error&) {
      continue;  // a fuzzer find the parser rejects
    }
    ++files;
    w.jaxpr(*cj->jaxpr, f.path().filename().string());
  }
  EXPECT_GT(files, 20);
}
