// minijax fuzz target: the .npy reader (mj::load_npy, with and without `like`) on arbitrary file bytes.
// Owns what counts as a crash for it: any exception that is not a minijax::Error escapes (libFuzzer aborts).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/errors.h"
#include "core/numpy.h"
#include "io/npy.h"
#include "fuzz_file.h"

// The bytes are a .npy file. load_npy(path) must return an array or throw a typed minijax error
// (IOError for a bad file); an array it returns is read back against itself as `like`, and a bf16
// `like` of shape (2, 3) exercises the '<u2' -> bfloat16 path (what save_npy writes for bf16). A
// file that loaded once must load again against its own array (a throw there escapes: a finding).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace mj = minijax;
  static const mj::Array& bf16_like = *new mj::Array(mj::zeros({2, 3}, mj::bf16));  // never destroyed
  const std::string path = minijax_fuzz::write_input(data, size, ".npy");
  mj::Array a;
  bool loaded = false;
  try {
    a = mj::load_npy(path);
    loaded = true;
  } catch (const mj::Error&) {
  }
  if (loaded) {
    mj::Array b = mj::load_npy(path, a);
    if (b.shape() != a.shape() || b.dtype() != a.dtype()) std::abort();  // like's aval, by contract
  }
  try {
    mj::load_npy(path, bf16_like);
  } catch (const mj::Error&) {
  }
  return 0;
}
