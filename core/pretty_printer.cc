// minijax pretty-printing documents (Wadler-Lindig, with JAX's fits rule).
// Owns the document nodes and the iterative layout with an explicit agenda.
#include "core/pretty_printer.h"

#include <utility>

namespace minijax::pp {

enum class Kind { nil, text, concat, brk, group, nest };

struct DocNode {
  Kind kind;
  std::string s;           // text, or a break's flat text
  std::vector<Doc> kids;   // concat children; group/nest child in kids[0]
  int n = 0;               // nest amount
};

namespace {
Doc make(Kind k, std::string s = {}, std::vector<Doc> kids = {}, int n = 0) {
  auto d = std::make_shared<DocNode>();
  d->kind = k;
  d->s = std::move(s);
  d->kids = std::move(kids);
  d->n = n;
  return d;
}

enum class Mode { flat, brk };
struct Item {
  int indent;
  Mode mode;
  const DocNode* doc;
};

// Whether `doc` laid out flat takes at most `width` columns.
bool fits(const DocNode* doc, int width) {
  std::vector<const DocNode*> agenda{doc};
  while (width >= 0 && !agenda.empty()) {
    const DocNode* d = agenda.back();
    agenda.pop_back();
    switch (d->kind) {
      case Kind::nil: break;
      case Kind::text:
      case Kind::brk: width -= int(d->s.size()); break;
      case Kind::concat:
        for (auto it = d->kids.rbegin(); it != d->kids.rend(); ++it) agenda.push_back(it->get());
        break;
      case Kind::group:
      case Kind::nest: agenda.push_back(d->kids[0].get()); break;
    }
  }
  return width >= 0;
}
}  // namespace

Doc nil() {
  static const Doc n = make(Kind::nil);
  return n;
}
Doc text(std::string s) { return make(Kind::text, std::move(s)); }
Doc concat(std::vector<Doc> docs) {
  if (docs.size() == 1) return docs[0];
  return make(Kind::concat, {}, std::move(docs));
}
Doc brk(std::string s) { return make(Kind::brk, std::move(s)); }
Doc group(Doc d) { return make(Kind::group, {}, {std::move(d)}); }
Doc nest(int n, Doc d) { return make(Kind::nest, {}, {std::move(d)}, n); }
Doc join(const Doc& sep, const std::vector<Doc>& docs) {
  if (docs.empty()) return nil();
  std::vector<Doc> xs{docs[0]};
  for (size_t i = 1; i < docs.size(); ++i) {
    xs.push_back(sep);
    xs.push_back(docs[i]);
  }
  return concat(std::move(xs));
}
Doc operator+(const Doc& a, const Doc& b) { return concat({a, b}); }

std::string format(const Doc& doc, int width) {
  std::string out;
  int k = 0;  // column
  std::vector<Item> agenda{{0, Mode::brk, doc.get()}};
  while (!agenda.empty()) {
    Item it = agenda.back();
    agenda.pop_back();
    const DocNode* d = it.doc;
    switch (d->kind) {
      case Kind::nil: break;
      case Kind::text:
        out += d->s;
        k += int(d->s.size());
        break;
      case Kind::concat:
        for (auto c = d->kids.rbegin(); c != d->kids.rend(); ++c)
          agenda.push_back({it.indent, it.mode, c->get()});
        break;
      case Kind::brk:
        if (it.mode == Mode::brk) {
          out += "\n" + std::string(size_t(it.indent), ' ');
          k = it.indent;
        } else {
          out += d->s;
          k += int(d->s.size());
        }
        break;
      case Kind::nest: agenda.push_back({it.indent + d->n, it.mode, d->kids[0].get()}); break;
      case Kind::group:
        agenda.push_back({it.indent, fits(d->kids[0].get(), width - k) ? Mode::flat : Mode::brk,
                          d->kids[0].get()});
        break;
    }
  }
  return out;
}

}  // namespace minijax::pp
