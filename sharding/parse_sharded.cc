// minijax sharded jaxpr text: the header lines (mesh, in/out shardings) above a printed jaxpr and
// the reader of printed shardings, which parse_jaxpr_with uses for `sharding=` params.
#include "sharding/parse_sharded.h"

#include <cctype>
#include <climits>
#include <cstring>
#include <sstream>

#include "core/device.h"
#include "core/errors.h"
#include "core/parser.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding_param.h"

namespace minijax {

namespace {

// A position in a short text (a header's body, a sharding); errors are bare ValueErrors whose
// message the callers prefix with where the text came from.
struct Cursor {
  const std::string& s;
  size_t i = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw ValueError(why + (i < s.size() ? " (near '" + s.substr(i, 16) + "')" : " (at the end)"));
  }
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool at_end() {
    ws();
    return i >= s.size();
  }
  char peek() {
    ws();
    return i < s.size() ? s[i] : '\0';
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i;
    return true;
  }
  void need(char c, const char* what) {
    if (!eat(c)) fail(std::string("expected '") + c + "' " + what);
  }
  // The identifier `w` (not followed by more identifier characters), consumed if there.
  bool word(const char* w) {
    ws();
    const size_t n = std::strlen(w);
    if (s.compare(i, n, w) != 0) return false;
    if (i + n < s.size() && (std::isalnum(static_cast<unsigned char>(s[i + n])) || s[i + n] == '_')) return false;
    i += n;
    return true;
  }
  std::string ident() {
    ws();
    const size_t b = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    if (i == b) fail("expected a name");
    return s.substr(b, i - b);
  }
  std::string quoted(char q) {
    need(q, "(a quoted name)");
    const size_t e = s.find(q, i);
    if (e == std::string::npos) fail(std::string("unterminated ") + q);
    std::string r = s.substr(i, e - i);
    i = e + 1;
    return r;
  }
  int64_t integer() {
    ws();
    const size_t b = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == b || (i == b + 1 && s[b] == '-')) fail("expected an integer");
    if (i - b > 12) fail("integer " + s.substr(b, i - b) + " is too large");
    return std::stoll(s.substr(b, i - b));
  }
};

// ---- printed shardings (Sharding::str) ----------------------------------------------------------

// `"x"` or `"x":(1)2`, an axis of `mesh`.
AxisRef read_axis_ref(Cursor& c, const Mesh& mesh) {
  const std::string name = c.quoted('"');
  if (!mesh.has_axis(name)) {
    std::string axes;
    for (auto& n : mesh.axis_names) axes += (axes.empty() ? "'" : ", '") + n + "'";
    throw ValueError("axis '" + name + "' is not an axis of " + mesh.str() + " (axes: " + axes + ")");
  }
  if (!c.eat(':')) return AxisRef::axis(name);
  c.need('(', "before a sub-axis' pre-size");
  const int64_t pre = c.integer();
  c.need(')', "after a sub-axis' pre-size");
  return AxisRef::sub(name, pre, c.integer());
}

// `{"x", "y"}` (replicated=, unreduced=).
std::vector<AxisRef> read_refs(Cursor& c, const Mesh& mesh) {
  c.need('{', "(a list of axes)");
  std::vector<AxisRef> v;
  if (c.eat('}')) return v;
  do v.push_back(read_axis_ref(c, mesh));
  while (c.eat(','));
  c.need('}', "after a list of axes");
  return v;
}

// `{"x", ?}p1`, `{?}`, `{}`.
DimSharding read_dim(Cursor& c, const Mesh& mesh) {
  c.need('{', "(a dimension's sharding)");
  DimSharding d;
  if (!c.eat('}')) {
    do {
      if (c.eat('?')) {
        d.closed = false;
        break;
      }
      d.axes.push_back(read_axis_ref(c, mesh));
    } while (c.eat(','));
    c.need('}', "after a dimension's axes (`?` comes last)");
  }
  if (c.i < c.s.size() && c.s[c.i] == 'p' && c.i + 1 < c.s.size() &&
      std::isdigit(static_cast<unsigned char>(c.s[c.i + 1]))) {
    ++c.i;
    d.priority = c.integer();
  }
  return d;
}

// `[dims...]` and the optional `, replicated={...}`, `, unreduced={...}`, `, memory_kind=K`; a
// comma followed by anything else is left for the caller (the next entry of a list).
Sharding read_sharding(Cursor& c, const std::shared_ptr<const Mesh>& mesh) {
  if (!mesh) throw ValueError("a sharding needs a mesh");
  Sharding s;
  s.mesh = mesh;
  c.need('[', "(a sharding starts with its dimensions, `[{...}, ...]`)");
  if (!c.eat(']')) {
    do s.dims.push_back(read_dim(c, *mesh));
    while (c.eat(','));
    c.need(']', "after the dimensions");
  }
  while (true) {
    const size_t save = c.i;
    if (!c.eat(',')) break;
    if (c.word("replicated")) {
      c.need('=', "after replicated");
      s.replicated = read_refs(c, *mesh);
    } else if (c.word("unreduced")) {
      c.need('=', "after unreduced");
      s.unreduced = read_refs(c, *mesh);
    } else if (c.word("memory_kind")) {
      c.need('=', "after memory_kind");
      s.memory_kind = memory_kind_from_name(c.ident());
    } else {
      c.i = save;
      break;
    }
  }
  return s;
}

// ---- the header ---------------------------------------------------------------------------------

struct HeaderLine {
  size_t line = 0;   // 1-based; 0: absent
  std::string text;  // the whole line, trimmed
  std::string body;  // after `# key:`
};

struct Header {
  HeaderLine mesh, in, out;
};

[[noreturn]] void header_fail(const HeaderLine& h, const std::string& why, std::source_location loc) {
  throw ValueError("parse_sharded_jaxpr: line " + std::to_string(h.line) + " (`" + h.text + "`): " + why, loc);
}

// `[0, 1, ...]`, nested lists (one level per mesh axis, at most 16) flattened, commas optional
// (numpy prints none).
void read_ids(Cursor& c, std::vector<int>& ids, int depth = 0) {
  if (depth >= 16) c.fail("device ids nested more than 16 lists deep");
  c.need('[', "(a list of device ids)");
  while (!c.eat(']')) {
    if (c.peek() == '[') {
      read_ids(c, ids, depth + 1);
    } else {
      const int64_t id = c.integer();
      if (id > INT_MAX) c.fail("device id " + std::to_string(id) + " is out of range");
      ids.push_back(int(id));
    }
    c.eat(',');
    if (c.at_end()) c.fail("expected ']' after the device ids");
  }
}

// The mesh of a `# mesh:` body: the axes (`name=size` or JAX's `'name': size`) and an optional
// device order (`devices=[...]` / `device_ids=[...]`). This checks what only the header asks, that
// every size divides the device count (the listed devices', else the process's); Mesh and
// make_mesh check the rest (sizes, names, repeated or negative devices, the product) and throw
// ShardingError. What does not parse is a bare ValueError (header_fail adds the line).
std::shared_ptr<const Mesh> read_mesh(const std::string& body, std::source_location loc) {
  Cursor c{body};
  const bool wrapped = c.word("Mesh");
  if (wrapped) c.need('(', "after Mesh");
  Shape shape;
  std::vector<std::string> names;
  std::optional<std::vector<int>> ids;
  do {
    const size_t at = c.i;
    if ((c.word("device_ids") || c.word("devices")) && (c.eat('=') || c.eat(':')) && c.peek() == '[') {
      if (ids) c.fail("the device order is given twice");
      read_ids(c, ids.emplace());
      continue;
    }
    c.i = at;  // an axis (which may be named like the device order's key)
    const char q = c.peek();
    names.push_back(q == '\'' || q == '"' ? c.quoted(q) : c.ident());
    if (!c.eat('=') && !c.eat(':')) c.fail("expected '=' and the size of axis '" + names.back() + "'");
    shape.push_back(c.integer());
  } while (c.eat(','));
  if (wrapped) c.need(')', "closing Mesh(");
  if (!c.at_end()) c.fail("unexpected text after the mesh");
  if (names.empty()) throw ValueError("the mesh has no axes");
  const int64_t count = ids ? int64_t(ids->size()) : num_devices(loc);
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] >= 1 && count % shape[k] != 0)
      throw ValueError("axis '" + names[k] + "' has size " + std::to_string(shape[k]) +
                       ", which does not divide the device count " + std::to_string(count) + " (" +
                       (ids ? "the listed devices"
                            : "the process's devices; list the mesh's devices with devices=[...] for another count") +
                       ")");
  return std::make_shared<const Mesh>(ids ? Mesh(std::move(*ids), shape, names, loc) : make_mesh(shape, names, loc));
}

// Blanks the comment lines of `text` (keeping its line numbers) and collects the header lines.
std::string strip_comments(const std::string& text, Header& h, std::source_location loc) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] != '#') {
      out += line + "\n";
      continue;
    }
    out += "\n";
    const size_t k = line.find_first_not_of(" \t", b + 1);
    const size_t e = line.find_last_not_of(" \t\r");
    for (auto [key, slot] : {std::pair{"mesh:", &h.mesh}, {"in_shardings:", &h.in}, {"out_shardings:", &h.out}}) {
      if (k == std::string::npos || line.compare(k, std::strlen(key), key) != 0) continue;
      HeaderLine here{n, line.substr(b, e - b + 1), line.substr(k + std::strlen(key))};
      if (slot->line) header_fail(here, "a second `# " + std::string(key) + "` line (the first is line " + std::to_string(slot->line) + ")", loc);
      *slot = std::move(here);
    }
  }
  return out;
}

// The entries of an in_shardings / out_shardings line (`what`), read before the jaxpr: nullopt
// when the line is absent.
std::optional<std::vector<std::optional<Sharding>>> read_entries(const HeaderLine& h, const std::string& what,
                                                                 const std::shared_ptr<const Mesh>& mesh,
                                                                 std::source_location loc) {
  if (!h.line) return std::nullopt;
  if (!mesh) header_fail(h, what + " without a `# mesh:` line (the shardings' mesh)", loc);
  std::vector<std::optional<Sharding>> v;
  try {
    Cursor c{h.body};
    if (!c.at_end()) {
      do {
        if (c.word("None")) v.emplace_back();
        else v.push_back(read_sharding(c, mesh));
      } while (c.eat(','));
      if (!c.at_end()) c.fail("expected ',' between the entries");
    }
  } catch (const ValueError& e) {
    header_fail(h, e.message(), loc);
  }
  return v;
}

// The entries fitted to the jaxpr's variables (`vars`: invars or outvars) of `avals`: one each
// (all nullopt without the line), each given one valid for its variable's shape.
std::vector<std::optional<Sharding>> fit_entries(const HeaderLine& h, std::optional<std::vector<std::optional<Sharding>>> v,
                                                 const std::string& vars, const std::vector<ShapedArray>& avals,
                                                 std::source_location loc) {
  if (!v) return std::vector<std::optional<Sharding>>(avals.size());
  if (v->size() != avals.size())
    header_fail(h, std::to_string(v->size()) + " entries, but the jaxpr has " + std::to_string(avals.size()) + " " + vars,
                loc);
  for (size_t k = 0; k < v->size(); ++k) {
    if (!(*v)[k]) continue;
    try {
      (*v)[k]->check(avals[k].shape, loc);
    } catch (const ShardingError& e) {
      header_fail(h, "entry " + std::to_string(k) + " (for a " + avals[k].str() + "): " + e.message(), loc);
    }
  }
  return std::move(*v);
}

// A whole text as one sharding (nothing after it).
Sharding read_whole_sharding(const std::string& text, const std::shared_ptr<const Mesh>& mesh) {
  Cursor c{text};
  Sharding s = read_sharding(c, mesh);
  if (!c.at_end()) c.fail("unexpected text after the sharding");
  return s;
}

}  // namespace

Sharding parse_sharding(const std::string& text, const std::shared_ptr<const Mesh>& mesh, std::source_location loc) {
  try {
    return read_whole_sharding(text, mesh);
  } catch (const ValueError& e) {
    throw ValueError("parse_sharding: '" + text + "': " + e.message(), loc);
  }
}

ShardedJaxpr parse_sharded_jaxpr(const std::string& text, std::source_location loc) {
  Header h;
  const std::string jaxpr_text = strip_comments(text, h, loc);
  ShardedJaxpr r;
  if (h.mesh.line) {
    try {
      r.mesh = read_mesh(h.mesh.body, loc);
    } catch (const ValueError& e) {
      header_fail(h.mesh, e.message(), loc);
    } catch (const ShardingError& e) {  // Mesh's own checks (an empty quoted axis name)
      header_fail(h.mesh, e.message(), loc);
    }
  }
  const std::shared_ptr<const Mesh> mesh = r.mesh;
  auto in = read_entries(h.in, "in_shardings", mesh, loc);  // refused without a mesh
  auto out = read_entries(h.out, "out_shardings", mesh, loc);
  if (!mesh) {
    r.jaxpr = parse_jaxpr(jaxpr_text, {}, loc);
    return r;
  }
  const ParamObjectParser reader = [mesh](const std::string& key, const std::string& t) -> ParamObjectPtr {
    if (key != "sharding" || t.empty() || t[0] != '[') return nullptr;
    try {
      return sharding_param(read_whole_sharding(t, mesh));
    } catch (const ValueError& e) {
      throw ValueError("parameter 'sharding' (" + t + "): " + e.message());
    }
  };
  r.jaxpr = detail::parse_jaxpr_with(jaxpr_text, reader, loc);
  r.in_shardings = fit_entries(h.in, std::move(in), "invars", r.jaxpr.in_avals(), loc);
  r.out_shardings = fit_entries(h.out, std::move(out), "outvars", r.jaxpr.out_avals(), loc);
  return r;
}

}  // namespace minijax
