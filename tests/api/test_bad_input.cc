// minijax public-API bad-input test: every declaration of tests/api/public_functions.txt gets a bad
// call (a typed mj:: error naming the function, the values and the call site) or a reason in
// tests/no_bad_input.txt. Owns the driver: reading both lists, matching them to the cases, running them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "api/bad_input.h"

namespace bad_input {

std::string temp_path(const std::string& file) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("minijax_api_tests_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return (dir / file).string();
}

std::string temp_file(const std::string& file, const std::string& bytes) {
  std::string p = temp_path(file);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

namespace {

std::vector<std::string> read_declarations() {
  std::ifstream in(std::string(MINIJAX_SOURCE_DIR) + "/tests/api/public_functions.txt");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') names.push_back(line);
  return names;
}

// tests/no_bad_input.txt: "qualified::name: reason" per line; '#' lines are comments.
std::map<std::string, std::string> read_reasons() {
  std::ifstream in(std::string(MINIJAX_SOURCE_DIR) + "/tests/no_bad_input.txt");
  std::map<std::string, std::string> reasons;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(": ");
    reasons[line.substr(0, colon)] = colon == std::string::npos ? "" : line.substr(colon + 2);
  }
  return reasons;
}

// Internal functions with bad-input cases: declared in internal headers (not in the public list),
// called by the library, its tests and its tools; their cases stay, checked as the public ones are.
const std::set<std::string> kInternalCases = {
    "minijax::abstract_eval",
    "minijax::axis_name_param",
    "minijax::axis_names_of",
    "minijax::axis_names_str",
    "minijax::bind",
    "minijax::bind1",
    "minijax::bind_call",
    "minijax::check_trace_depth",
    "minijax::collective_groups",
    "minijax::collective_stats",
    "minijax::dce_jaxpr",
    "minijax::device_boxes",
    "minijax::eqn_to_string",
    "minijax::eval_jaxpr",
    "minijax::eval_jaxpr_at",
    "minijax::execute",
    "minijax::find_top_trace",
    "minijax::jvp_flat",
    "minijax::linearize_flat",
    "minijax::parse_jaxpr",
    "minijax::plan_reshard",
    "minijax::primitive",
    "minijax::run_spmd",
    "minijax::sharding_rule_for",
    "minijax::throw_resource_exhausted",
    "minijax::trace_to_jaxpr",
    "minijax::verify_jaxpr",
    "minijax::vjp_flat",
};

std::vector<Case> all_cases() {
  std::vector<Case> all;
  for (auto list : {numpy_cases, lax_cases, transform_cases, sharding_cases, misc_cases, conv_cases, windowed_cases,
                    linalg_cases})
    for (Case& c : list()) all.push_back(std::move(c));
  return all;
}

}  // namespace

TEST(BadInput, EveryPublicDeclarationHasACaseOrAReason) {
  std::vector<std::string> decls = read_declarations();
  ASSERT_GT(decls.size(), 100u) << "tests/api/public_functions.txt is missing or short";
  std::map<std::string, std::string> reasons = read_reasons();
  std::set<std::string> with_case;
  for (const Case& c : all_cases()) with_case.insert(c.name);
  std::set<std::string> listed(decls.begin(), decls.end());
  size_t covered = 0, reasoned = 0;
  for (const std::string& d : decls) {
    bool has_case = with_case.count(d) > 0;
    auto r = reasons.find(d);
    bool has_reason = r != reasons.end();
    EXPECT_TRUE(has_case || has_reason)
        << d << " has neither a bad-input case (tests/api) nor a reason in tests/no_bad_input.txt";
    EXPECT_FALSE(has_case && has_reason) << d << " has a case, so no reason belongs in tests/no_bad_input.txt";
    if (has_reason) EXPECT_GE(r->second.size(), 10u) << d << ": the reason is missing or too short";
    covered += has_case;
    reasoned += has_reason && !has_case;
  }
  for (const std::string& n : with_case)
    EXPECT_TRUE(listed.count(n) || kInternalCases.count(n))
        << "case for " << n << ", which neither the public list nor kInternalCases holds";
  for (const std::string& n : kInternalCases) {
    EXPECT_FALSE(listed.count(n)) << n << " is public: its case counts as a public one, not in kInternalCases";
    EXPECT_TRUE(with_case.count(n)) << "kInternalCases names " << n << ", which has no case";
  }
  for (const auto& [n, why] : reasons)
    EXPECT_TRUE(listed.count(n)) << "tests/no_bad_input.txt names " << n << ", which the public list does not hold";
  std::cout << "[ api      ] " << decls.size() << " public declarations: " << covered
            << " with bad-input cases, " << reasoned << " with a reason in tests/no_bad_input.txt\n";
}

TEST(BadInput, EachBadCallThrowsATypedErrorNamingFunctionValuesAndCallSite) {
  std::vector<Case> cases = all_cases();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    c.run();
  }
  std::cout << "[ api      ] ran " << cases.size() << " bad-input cases\n";
  EXPECT_GT(cases.size(), 0u);
}

}  // namespace bad_input
