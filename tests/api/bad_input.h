// minijax public-API bad-input test: the case table shared by tests/api's files.
// Owns Case, the expect-a-typed-error helpers, and the per-file case lists the driver collects.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <typeinfo>
#include <vector>

#include "minijax/minijax.h"

namespace bad_input {

/// One bad call of a listed declaration (its qualified name as tests/api/public_functions.txt
/// spells it, overloads merged). `run` makes the call through the helpers below.
struct Case {
  std::string name;
  std::function<void()> run;
};

enum class Site { user, any };

/// Runs `f`, expecting an exception of exactly type E (a subclass of mj::Error) whose message
/// holds every one of `parts`; with Site::user its recorded call site must be in tests/api (the
/// user's call, not a line inside the library).
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts, Site site = Site::user) {
  try {
    f();
  } catch (const E& e) {
    if (typeid(e) != typeid(E)) {
      ADD_FAILURE() << "threw " << typeid(e).name() << " (a subclass), expected exactly "
                    << typeid(E).name() << ": " << e.what();
      return;
    }
    std::string what = e.message();  // without the call site, whose function name would match too
    for (const std::string& p : parts)
      EXPECT_NE(what.find(p), std::string::npos) << "message lacks \"" << p << "\": " << what;
    if (site == Site::user)
      EXPECT_NE(std::string(e.where().file_name()).find("tests/api/"), std::string::npos)
          << "call site is not the user's: " << what;
    return;
  } catch (const minijax::Error& e) {
    ADD_FAILURE() << "threw another mj:: error " << typeid(e).name() << ", expected "
                  << typeid(E).name() << ": " << e.what();
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw an untyped " << typeid(e).name() << ", expected " << typeid(E).name()
                  << ": " << e.what();
    return;
  }
  ADD_FAILURE() << "did not throw; expected " << typeid(E).name();
}

/// A small f32 array of the given shape (values 0, 1, 2, ...).
inline minijax::Array iota_f32(const minijax::Shape& shape) {
  std::vector<double> v(size_t(minijax::shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i);
  return minijax::array(v, shape, minijax::DType::f32);
}

/// The operands most cases call with: f32[2,3] and f32[4] (iota values), i32[2,3].
inline minijax::Array x23() { return iota_f32({2, 3}); }
inline minijax::Array x4() { return iota_f32({4}); }
inline minijax::Array i23() { return minijax::astype(iota_f32({2, 3}), minijax::DType::i32); }

/// A case named NAME: CALL throws ERR whose message holds every further argument, recorded at the
/// test's call site (BAD) or anywhere, for functions that take no call site (BAD_ANY_SITE).
#define BAD(NAME, ERR, CALL, ...) \
  Case { NAME, [] { expect_error<ERR>([&] { (void)(CALL); }, {__VA_ARGS__}); } }
#define BAD_ANY_SITE(NAME, ERR, CALL, ...) \
  Case { NAME, [] { expect_error<ERR>([&] { (void)(CALL); }, {__VA_ARGS__}, Site::any); } }

/// A path in a fresh temporary folder of this test (the folder created, the file not).
std::string temp_path(const std::string& file);
/// Writes `bytes` to a temporary file and returns its path.
std::string temp_file(const std::string& file, const std::string& bytes);

std::vector<Case> numpy_cases();
std::vector<Case> lax_cases();
std::vector<Case> transform_cases();
std::vector<Case> sharding_cases();
std::vector<Case> misc_cases();
std::vector<Case> conv_cases();
std::vector<Case> windowed_cases();
std::vector<Case> linalg_cases();

}  // namespace bad_input
