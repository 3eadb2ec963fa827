// minijax io: the Hugging Face safetensors format, a pytree's leaves keyed by their paths.
// Owns the header's writer and the checks a read makes (README "Format" of huggingface/safetensors).
#include "io/safetensors.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

#include "io/file.h"
#include "io/json.h"
#include "io/stored_array.h"

namespace minijax {

namespace detail {

namespace {
constexpr uint64_t kMaxHeader = 100'000'000;  // the reference implementation's MAX_HEADER_SIZE
constexpr const char* kMetadataKey = "__metadata__";
constexpr std::string_view kCrcPrefix = "crc32:";

// zlib's CRC-32 of n bytes (crc32 takes at most UINT_MAX bytes a call).
uint32_t crc32_of(const void* data, uint64_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt chunk = uInt(std::min<uint64_t>(n, 1u << 30));
    c = crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return uint32_t(c);
}

std::string hex8(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", unsigned(v));
  return buf;
}

// "crc32:<name>" entries of the metadata: the value is 8 hex digits (either case), the file holds
// a tensor <name>, and its bytes have that CRC-32.
void check_crcs(const IOContext& ctx, const std::map<std::string, std::string>& metadata,
                const std::vector<StoredArray>& arrays) {
  std::map<std::string_view, const StoredArray*> by_name;
  for (const StoredArray& s : arrays) by_name[s.key] = &s;
  for (auto& [key, value] : metadata) {
    if (key.compare(0, kCrcPrefix.size(), kCrcPrefix) != 0) continue;
    const IOContext kctx = ctx.at(key);
    bool hex = value.size() == 8;
    uint32_t want = 0;
    for (char ch : value) {
      const int d = ch >= '0' && ch <= '9' ? ch - '0'
                    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                             : -1;
      if (d < 0) hex = false;
      want = (want << 4) | uint32_t(d & 15);
    }
    if (!hex)
      kctx.fail("the __metadata__ value \"" + value + "\" is not a CRC-32 of 8 hexadecimal digits");
    const std::string name = key.substr(kCrcPrefix.size());
    const auto it = by_name.find(name);
    const StoredArray* a = it == by_name.end() ? nullptr : it->second;
    if (!a) kctx.fail("the __metadata__ entry names the tensor '" + name + "', which the file does not hold");
    const uint32_t got = crc32_of(a->data, a->nbytes);
    if (got != want)
      kctx.fail("the tensor '" + name + "' has the CRC-32 " + hex8(got) + ", the __metadata__ entry says " + value +
                " (the tensor's data is corrupt)");
  }
}

const char* st_dtype(DType d) {
  switch (d) {
    case DType::bool_: return "BOOL";
    case DType::i32: return "I32";
    case DType::u32: return "U32";
    case DType::bf16: return "BF16";
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    default: return "";
  }
}

DType dtype_of(const IOContext& ctx, const std::string& name) {
  for (DType d : {DType::bool_, DType::i32, DType::u32, DType::bf16, DType::f32, DType::f64})
    if (name == st_dtype(d)) return d;
  ctx.fail("unsupported dtype \"" + name + "\" (minijax reads BOOL, I32, U32, BF16, F32 and F64)");
}

// A parsed file: its tensors (pointing into `bytes`) and metadata.
struct Contents {
  std::vector<uint8_t> bytes;
  std::vector<StoredArray> arrays;
  std::map<std::string, std::string> metadata;
};

// One tensor entry of the header: {"dtype": ..., "shape": [...], "data_offsets": [b, e]}.
StoredArray tensor_entry(const IOContext& ctx, const json::Value& v, uint64_t& begin, uint64_t& end) {
  if (v.kind != json::Value::Kind::object)
    ctx.fail(std::string("a tensor entry {\"dtype\", \"shape\", \"data_offsets\"}, got ") + v.kind_name());
  const json::Value* dtype = v.find("dtype");
  const json::Value* shape = v.find("shape");
  const json::Value* offsets = v.find("data_offsets");
  if (!dtype || dtype->kind != json::Value::Kind::string) ctx.fail("a string \"dtype\" in the tensor entry");
  if (!shape || shape->kind != json::Value::Kind::array)
    ctx.fail("an array of non-negative integers as \"shape\" in the tensor entry");
  if (!offsets || offsets->kind != json::Value::Kind::array || offsets->items.size() != 2 ||
      !offsets->items[0].to_u64(begin) || !offsets->items[1].to_u64(end) || end < begin)
    ctx.fail("\"data_offsets\": [begin, end] with integers 0 <= begin <= end in the tensor entry");
  StoredArray s;
  s.key = ctx.key;
  s.dtype = dtype_of(ctx, dtype->text);
  std::vector<uint64_t> dims;
  for (const json::Value& d : shape->items) {
    uint64_t x = 0;
    if (!d.to_u64(x)) ctx.fail("an array of non-negative integers as \"shape\" in the tensor entry");
    dims.push_back(x);
  }
  s.nbytes = checked_nbytes(ctx, dims, itemsize(s.dtype), s.shape);
  if (end - begin != s.nbytes)
    ctx.fail("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] span " +
             std::to_string(end - begin) + " bytes, but " + describe(s.dtype, s.shape) + " needs " +
             std::to_string(s.nbytes));
  return s;
}

Contents read_safetensors(const IOContext& ctx) {
  Contents c;
  c.bytes = read_file(ctx);
  const size_t n = c.bytes.size();
  if (n < 8) ctx.fail("truncated: " + std::to_string(n) + " bytes, fewer than the 8 of the header length");
  const uint64_t hlen = get_le(c.bytes.data(), 8);
  if (hlen > kMaxHeader)
    ctx.fail("the header length " + std::to_string(hlen) + " is over the format's limit of 100000000 bytes "
             "(not a safetensors file, or a corrupt one)");
  if (hlen > n - 8)
    ctx.fail("truncated: the header claims " + std::to_string(hlen) + " bytes, the file holds " +
             std::to_string(n - 8) + " after the length");
  const std::string_view text(reinterpret_cast<const char*>(c.bytes.data()) + 8, size_t(hlen));
  if (text.empty() || text[0] != '{') ctx.fail("a header starting with '{' (not a safetensors file?)");
  json::Value header;
  try {
    header = json::parse(text);
  } catch (const json::ParseError& e) {
    ctx.fail(std::string("a JSON header: ") + e.what());
  }
  // Entries in data order; with the ranges' checks (contiguous from 0, ending at the file's end).
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto& [key, v] : header.members) {
    const IOContext kctx = ctx.at(key);
    if (key == kMetadataKey) {
      if (v.kind != json::Value::Kind::object) kctx.fail("an object of strings as __metadata__");
      for (auto& [mk, mv] : v.members) {
        if (mv.kind != json::Value::Kind::string)
          kctx.fail("string values in __metadata__ (the entry '" + mk + "' is " + mv.kind_name() + ")");
        c.metadata[mk] = mv.text;
      }
      continue;
    }
    uint64_t begin = 0, end = 0;
    c.arrays.push_back(tensor_entry(kctx, v, begin, end));
    ranges.emplace_back(begin, end);
  }
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  const uint64_t data_at = 8 + hlen, data_len = n - data_at;
  uint64_t next = 0;
  for (size_t i : order) {
    const IOContext kctx = ctx.at(c.arrays[i].key);
    if (ranges[i].first != next)
      kctx.fail("data_offsets starting at " + std::to_string(ranges[i].first) + ", expected " +
                std::to_string(next) + " (tensors must tile the data with no hole or overlap)");
    if (ranges[i].second > data_len)
      kctx.fail("truncated: data_offsets end at " + std::to_string(ranges[i].second) + ", the file holds " +
                std::to_string(data_len) + " bytes of data");
    c.arrays[i].data = c.bytes.data() + data_at + ranges[i].first;
    next = ranges[i].second;
  }
  if (next != data_len)
    ctx.fail("the tensors' data_offsets cover " + std::to_string(next) + " bytes, the file holds " +
             std::to_string(data_len) + " after the header (trailing or missing bytes)");
  check_crcs(ctx, c.metadata, c.arrays);
  return c;
}
}  // namespace

void save_safetensors_leaves(const std::string& path, const PathLeaves& leaves,
                             const std::map<std::string, std::string>& given_metadata,
                             const SafetensorsSaveOptions& options, std::source_location loc) {
  const IOContext ctx{"save_safetensors", path, "", loc};
  check_save_leaves(ctx, leaves, kMetadataKey);
  std::map<std::string, std::string> metadata = given_metadata;
  if (options.crc32) {
    for (auto& [k, v] : given_metadata)
      if (k.compare(0, kCrcPrefix.size(), kCrcPrefix) == 0)
        throw ValueError(ctx.where() + ": the metadata entry '" + k +
                             "' starts with \"crc32:\", which the saver writes itself with "
                             "SafetensorsSaveOptions::crc32",
                         loc);
    for (auto& [name, a] : leaves)
      metadata[std::string(kCrcPrefix) + name] = hex8(crc32_of(a.raw_data(loc), uint64_t(a.aval().nbytes())));
  }
  for (const auto& [k, v] : metadata)
    for (const std::string* s : {&k, &v}) try {
        json::parse(json::quote(*s));
      } catch (const json::ParseError&) {
        throw ValueError(ctx.where() + ": the metadata entry '" + k + "' is not valid UTF-8", loc);
      }
  // Larger elements first, then by name: every tensor starts at a multiple of its element size.
  std::vector<size_t> order(leaves.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const size_t ia = itemsize(leaves[a].second.dtype()), ib = itemsize(leaves[b].second.dtype());
    return ia != ib ? ia > ib : leaves[a].first < leaves[b].first;
  });
  std::string header = "{";
  if (!metadata.empty()) {
    header += json::quote(kMetadataKey) + ":{";
    bool first = true;
    for (auto& [k, v] : metadata) {
      header += (first ? "" : ",") + json::quote(k) + ":" + json::quote(v);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const Array& a = leaves[i].second;
    std::string shape;
    for (int64_t d : a.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    const uint64_t end = offset + uint64_t(a.aval().nbytes());
    header += (header.size() > 1 ? "," : "") + json::quote(leaves[i].first) + ":{\"dtype\":\"" + st_dtype(a.dtype()) +
              "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kMaxHeader)
    ctx.fail("the header would be " + std::to_string(header.size()) + " bytes, over the format's limit of 100000000");
  std::string len;
  put_le(len, header.size(), 8);
  AtomicFile f(ctx);
  f.write(len.data(), len.size());
  f.write(header.data(), header.size());
  for (size_t i : order) f.write(leaves[i].second.raw_data(loc), size_t(leaves[i].second.aval().nbytes()));
  f.commit();
}

std::vector<Array> load_safetensors_like(const std::string& path, const PathLeaves& like, std::source_location loc) {
  const IOContext ctx{"load_safetensors", path, "", loc};
  Contents c = read_safetensors(ctx);
  return match_like(ctx, c.arrays, like);
}

}  // namespace detail

std::map<std::string, Array> load_safetensors(const std::string& path, std::source_location loc) {
  const detail::IOContext ctx{"load_safetensors", path, "", loc};
  detail::Contents c = detail::read_safetensors(ctx);
  return detail::materialize_all(c.arrays);
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path, std::source_location loc) {
  const detail::IOContext ctx{"load_safetensors_metadata", path, "", loc};
  return detail::read_safetensors(ctx).metadata;
}

}  // namespace minijax
