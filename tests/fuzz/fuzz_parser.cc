// minijax fuzz target: the jaxpr parser (core/parser.h) on arbitrary text.
// Owns what counts as a crash for it: any exception that is not a minijax::Error escapes (libFuzzer aborts).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "core/jaxpr.h"
#include "core/parser.h"
#include "core/verify.h"

// The text is parsed without the type check (detail::parse_jaxpr_unchecked, so that ill-typed
// jaxprs reach every later step), then verified (shape rules on the parsed avals), printed, and
// its printed form parsed again by parse_jaxpr (which verifies): each step may reject the text
// with a typed minijax error, never crash.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  minijax::ClosedJaxpr j;
  try {
    j = minijax::detail::parse_jaxpr_unchecked(text);
  } catch (const minijax::Error&) {
    return 0;
  }
  try {
    minijax::verify_jaxpr(j);
  } catch (const minijax::Error&) {
  }
  std::string printed = minijax::to_string(j);
  try {
    minijax::parse_jaxpr(printed);
  } catch (const minijax::Error&) {
  }
  return 0;
}
