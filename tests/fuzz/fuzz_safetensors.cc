// minijax fuzz target: the safetensors reader (load_safetensors, against `like`, its metadata) on arbitrary bytes.
// Owns what counts as a crash for it: any exception that is not a minijax::Error escapes (libFuzzer aborts).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "core/errors.h"
#include "io/safetensors.h"
#include "fuzz_file.h"

// The bytes are a safetensors file. load_safetensors(path) must return every tensor or throw a
// typed minijax error (IOError for a bad file); what it returns is loaded again with itself as
// `like`, and the "__metadata__" object is read: each must succeed once the file checked out.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace mj = minijax;
  const std::string path = minijax_fuzz::write_input(data, size, ".safetensors");
  std::map<std::string, mj::Array> all;
  try {
    all = mj::load_safetensors(path);
  } catch (const mj::Error&) {
    return 0;
  }
  // The file checked out once: reading it again (like, metadata) must not throw.
  std::map<std::string, mj::Array> again = mj::load_safetensors(path, all);
  if (again.size() != all.size()) std::abort();
  mj::load_safetensors_metadata(path);
  return 0;
}
