// minijax io: numpy's .npz format, a pytree's leaves as the .npy members of a zip archive.
// Owns save_npz / load_npz (numpy.savez, numpy.savez_compressed, numpy.load) and NpzOptions.
#pragma once
#include <map>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/pytree.h"

namespace minijax {

/// How save_npz writes its members: stored (numpy.savez) or deflated (numpy.savez_compressed).
struct NpzOptions {
  bool compressed = false;
};

/// The npz member recording the dtypes numpy cannot: a JSON object from key to dtype name, e.g.
/// {"layers.0.w": "bfloat16"}, for the bf16 leaves, whose .npy members hold their bits as '<u2'.
/// Written only when the tree has a bf16 leaf (so other archives are exactly what numpy writes);
/// numpy.load lists it among `files` and returns its bytes, and ignores it otherwise.
inline constexpr const char* kNpzDtypesMember = "__minijax_dtypes__.json";

namespace detail {
void save_npz_leaves(const std::string& path, const PathLeaves& leaves, NpzOptions opts,
                     std::source_location loc);
std::vector<Array> load_npz_like(const std::string& path, const PathLeaves& like, std::source_location loc);
}  // namespace detail

/// Writes the leaves of `tree` to `path` as numpy.savez (opts.compressed: numpy.savez_compressed)
/// does: a zip archive (PKWARE APPNOTE; stored, or deflated through zlib) holding one .npy member
/// per leaf, named `<path>.npy` after the leaf's path (flatten_with_path: `w1.npy`,
/// `layers.0.w.npy`, `mu.w1.npy`), each in save_npy's format; bf16 leaves are written as '<u2'
/// and listed in the kNpzDtypesMember member. `np.load(path)["layers.0.w"]` reads a leaf back.
/// The write is atomic (temporary file in the same folder, fsync, rename): `path` keeps its old
/// contents unless the whole archive was written. Limits: no zip64, so each member and the
/// archive stay under 4 GiB and under 65535 members (IOError beyond). Throws ValueError naming the
/// key for an empty (a bare Array at the root: use save_npy), repeated or reserved path;
/// ConcretizationError for a traced leaf; IOError naming the file for an unsupported dtype or a
/// failed write.
template <class T>
  requires PyTree<T>
void save_npz(const std::string& path, const T& tree, NpzOptions opts = {},
              std::source_location loc = std::source_location::current()) {
  detail::save_npz_leaves(path, flatten_with_path(tree), opts, loc);
}

/// Every array of an .npz file (numpy.savez, numpy.savez_compressed or save_npz), by key (the
/// member's name without ".npy"), as new strongly typed device arrays; bf16 for the keys the
/// kNpzDtypesMember member lists. Throws IOError naming the function, the file, the key and what
/// was expected for: a missing or foreign file, a truncated or corrupt archive (bad directory,
/// CRC-32, deflate stream, sizes), a member that is not a .npy, a corrupt .npy member or an
/// unsupported dtype (see load_npy), zip64 or encrypted archives. Nothing is returned unless
/// every member was read.
std::map<std::string, Array> load_npz(const std::string& path,
                                      std::source_location loc = std::source_location::current());

/// The pytree of `like`'s structure whose leaves are read from the .npz at `path`, each the
/// member named by the leaf's path (flatten_with_path), as flax's from_state_dict restores a
/// state dict. `like` gives structure, shapes and dtypes only (its values are not read; abstract
/// leaves will do); the loaded leaves take like's avals. Throws IOError naming the file, the key
/// and what was expected when a key of `like` is missing, the file holds a key `like` lacks, or
/// a dtype or shape differs, and for everything load_npz(path) throws for. Nothing is loaded
/// partially: the result exists only when every leaf was read.
template <class T>
  requires PyTree<T>
T load_npz(const std::string& path, const T& like, std::source_location loc = std::source_location::current()) {
  return tree_unflatten(like, detail::load_npz_like(path, flatten_with_path(like), loc), loc);
}

}  // namespace minijax
