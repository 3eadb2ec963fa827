// minijax call signatures: the hash of a Signature and the aval words of a checkpoint's key.
// Owns Signature::finish and append_aval_signature (the templates are in core/call_signature.h).
#include "core/call_signature.h"

namespace minijax::detail {

void Signature::finish() {
  // 64-bit FNV-1a over the words, then mixed with the text's hash.
  uint64_t h = 1469598103934665603ull;
  for (uint64_t w : words) {
    h ^= w;
    h *= 1099511628211ull;
  }
  if (!text.empty()) h ^= std::hash<std::string>{}(text) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  hash = size_t(h);
}

void append_aval_signature(Signature& sig, const std::vector<ShapedArray>& avals) {
  for (const ShapedArray& av : avals) {
    sig.words.push_back(uint64_t(av.dtype) | uint64_t(av.weak_type) << 8 | uint64_t(av.memory_kind) << 9 |
                        uint64_t(av.shape.size()) << 16);
    for (int64_t d : av.shape) sig.words.push_back(uint64_t(d));
  }
}

}  // namespace minijax::detail
