// minijax io: numpy's .npz format, a pytree's leaves as the .npy members of a zip archive.
// Owns writing the members (and the bf16 dtypes member) and reading an archive into StoredArrays.
#include "io/npz.h"

#include <set>

#include "io/file.h"
#include "io/json.h"
#include "io/npy.h"
#include "io/stored_array.h"
#include "io/zip.h"

namespace minijax {

namespace detail {

namespace {
constexpr std::string_view kNpy = ".npy";

// The arrays of an npz archive and the member bytes they point into.
struct NpzContents {
  std::vector<std::vector<uint8_t>> members;
  std::vector<StoredArray> arrays;
};

// The keys the dtypes member records as bfloat16 (its JSON: an object of "bfloat16" strings).
std::map<std::string, bool> read_dtypes_member(const IOContext& ctx, const std::vector<uint8_t>& text) {
  const IOContext mctx = ctx.at(kNpzDtypesMember);
  json::Value v;
  try {
    v = json::parse(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()));
  } catch (const json::ParseError& e) {
    mctx.fail(e.what());
  }
  if (v.kind != json::Value::Kind::object) mctx.fail(std::string("a JSON object, got ") + v.kind_name());
  std::map<std::string, bool> bf16;
  for (auto& [k, d] : v.members) {
    if (d.kind != json::Value::Kind::string || d.text != "bfloat16")
      mctx.fail("the entry for '" + k + "' to be \"bfloat16\" (the only dtype numpy lacks among minijax's)");
    bf16[k] = true;
  }
  return bf16;
}

NpzContents read_npz(const IOContext& ctx) {
  const std::vector<uint8_t> bytes = read_file(ctx);
  const std::vector<zip::Member> members = zip::read_directory(ctx, bytes.data(), bytes.size());
  std::map<std::string, bool> bf16;
  for (const zip::Member& m : members)
    if (m.name == kNpzDtypesMember) bf16 = read_dtypes_member(ctx, zip::extract(ctx, bytes.data(), bytes.size(), m));
  std::set<std::string> names;
  for (const zip::Member& m : members) names.insert(m.name);
  for (auto& [key, _] : bf16)
    if (!names.count(key + std::string(kNpy)))
      ctx.at(key).fail(std::string(kNpzDtypesMember) + " lists this key, but the archive has no " + key +
                       ".npy member");
  NpzContents c;
  c.members.reserve(members.size());
  for (const zip::Member& m : members) {
    if (m.name == kNpzDtypesMember) continue;
    if (m.name.size() <= kNpy.size() || m.name.compare(m.name.size() - kNpy.size(), kNpy.size(), kNpy) != 0)
      ctx.at(m.name).fail("a member that is not a .npy file (an .npz holds <key>.npy members and " +
                          std::string(kNpzDtypesMember) + ")");
    const std::string key = m.name.substr(0, m.name.size() - kNpy.size());
    c.members.push_back(zip::extract(ctx, bytes.data(), bytes.size(), m));
    const std::vector<uint8_t>& mb = c.members.back();
    const bool is_bf16 = bf16.count(key) > 0;
    StoredArray s = parse_npy(ctx.at(key), mb.data(), mb.size(), is_bf16);
    if (is_bf16 && s.dtype != DType::bf16)
      ctx.at(key).fail(std::string(kNpzDtypesMember) + " records it as bfloat16, but its .npy dtype is " +
                       npy_descr(s.dtype) + " (expected <u2)");
    c.arrays.push_back(s);
  }
  return c;
}
}  // namespace

void save_npz_leaves(const std::string& path, const PathLeaves& leaves, NpzOptions opts, std::source_location loc) {
  const IOContext ctx{"save_npz", path, "", loc};
  check_save_leaves(ctx, leaves, kNpzDtypesMember);
  std::vector<std::string> headers;
  std::string dtypes;
  for (auto& [key, leaf] : leaves) {
    headers.push_back(npy_header(leaf.dtype(), leaf.shape()));
    if (leaf.dtype() == DType::bf16) dtypes += (dtypes.empty() ? "{" : ", ") + json::quote(key) + ": \"bfloat16\"";
  }
  AtomicFile f(ctx);
  zip::Writer w(f, ctx);
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& leaf = leaves[i].second;
    w.add(leaves[i].first + std::string(kNpy),
          {{headers[i].data(), headers[i].size()}, {leaf.raw_data(loc), size_t(leaf.aval().nbytes())}},
          opts.compressed);
  }
  if (!dtypes.empty()) {
    dtypes += "}\n";
    w.add(kNpzDtypesMember, {{dtypes.data(), dtypes.size()}}, opts.compressed);
  }
  w.finish();
  f.commit();
}

std::vector<Array> load_npz_like(const std::string& path, const PathLeaves& like, std::source_location loc) {
  const IOContext ctx{"load_npz", path, "", loc};
  NpzContents c = read_npz(ctx);
  return match_like(ctx, c.arrays, like);
}

}  // namespace detail

std::map<std::string, Array> load_npz(const std::string& path, std::source_location loc) {
  const detail::IOContext ctx{"load_npz", path, "", loc};
  detail::NpzContents c = detail::read_npz(ctx);
  return detail::materialize_all(c.arrays);
}

}  // namespace minijax
