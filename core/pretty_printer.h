// minijax pretty-printing documents: a Wadler-Lindig pretty printer, as JAX's pretty_printer.
// Owns Doc (text, concat, break, group, nest) and the layout algorithm the jaxpr printer uses.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace minijax::pp {

struct DocNode;
/// An immutable document; cheap to copy.
using Doc = std::shared_ptr<const DocNode>;

/// The empty document.
Doc nil();
/// Literal text (no newlines).
Doc text(std::string s);
/// Concatenation of documents.
Doc concat(std::vector<Doc> docs);
/// A break: printed as `s` when its enclosing group is laid out flat, as a newline followed by
/// the current indentation otherwise.
Doc brk(std::string s = " ");
/// A layout alternative: flat if the whole group fits in the remaining width, broken otherwise.
Doc group(Doc d);
/// Increases the indentation of the breaks inside `d` by n.
Doc nest(int n, Doc d);
/// docs separated by sep.
Doc join(const Doc& sep, const std::vector<Doc>& docs);
/// a followed by b.
Doc operator+(const Doc& a, const Doc& b);

/// Lays the document out in `width` columns. The algorithm is JAX's (jax/_src/pretty_printer.py,
/// after Lindig's "Strictly Pretty"): a group is flat iff its own flat width fits in the rest of
/// the current line (what follows the group is not considered).
std::string format(const Doc& d, int width = 80);

}  // namespace minijax::pp
