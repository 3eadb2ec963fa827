// minijax fuzz target: the .npz reader (mj::load_npz, by key and against `like`) on arbitrary file bytes.
// Owns what counts as a crash for it: any exception that is not a minijax::Error escapes (libFuzzer aborts).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "core/errors.h"
#include "io/npz.h"
#include "fuzz_file.h"

// The bytes are an .npz (zip) archive. load_npz(path) must return every member or throw a typed
// minijax error (IOError for a bad archive); what it returns is loaded again with itself as
// `like` (the key, dtype and shape matching path), which must succeed with the same keys (a throw
// there escapes: a finding).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace mj = minijax;
  const std::string path = minijax_fuzz::write_input(data, size, ".npz");
  std::map<std::string, mj::Array> all;
  try {
    all = mj::load_npz(path);
  } catch (const mj::Error&) {
    return 0;
  }
  std::map<std::string, mj::Array> again = mj::load_npz(path, all);
  if (again.size() != all.size()) std::abort();
  return 0;
}
