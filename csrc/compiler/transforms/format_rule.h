// Format rewrite rules: what format_decompose needs to know about one
// composable format.
//
// A rule is a format function (iterators and buffers, body `pass`) whose
// T.func_attr carries the rewrite, the single-script form of the design:
//
//   T.func_attr({
//       "buffer_to_rewrite": "A",                         (or a list of names)
//       "iterator_map": {"I": ["IO", "II"], "J": ["JO", "JI"]},
//       "idx_map": (lambda i, j: (i // block_size, j // block_size, i % block_size, j % block_size)),
//       "inv_idx_map": (lambda io, jo, ii, ji: (io * block_size + ii, jo * block_size + ji)),
//   })
//
// Instantiating the rule under a name ("4") renames everything the format
// declares with that suffix (a -> a_4, IO -> IO_4, A -> A_4) so several rules,
// or the same format twice, can live in one function. Parameters fixed by
// st.specialize (block_size = 4) become constants, in the iterators and in
// the maps, and leave the signature.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/function.h"

namespace sparsetir {

// A lambda of an attribute: parameters and one expression per result.
struct IndexMap {
  std::vector<Var> params;
  std::vector<Expr> results;
  // The results with params[q] replaced by args[q].
  std::vector<Expr> Apply(const std::vector<Expr>& args) const;
};

// One rewrite of one buffer of the computation.
struct FormatTarget {
  std::string buffer;                  // the buffer of the computation ("A")
  Buffer format_buffer;                // its replacement ("A_4")
  // Original iterator name -> the format iterators standing for it, in order.
  std::vector<std::pair<std::string, std::vector<SparseIterator>>> iterator_map;
  IndexMap idx_map;      // original coordinates -> format_buffer coordinates
  IndexMap inv_idx_map;  // format_buffer coordinates (in its axis order) -> original ones
};

struct FormatRule {
  std::string name;                       // the suffix ("4")
  std::vector<Var> params;                // renamed, specialized ones dropped
  std::vector<SparseIterator> iterators;  // renamed, in definition order
  std::vector<Buffer> buffers;            // renamed, in definition order
  std::vector<FormatTarget> targets;      // one per buffer_to_rewrite
};

// Reads the rule from `format`'s attributes and renames it with `name`. A
// format level whose coordinate is an original coordinate unchanged takes the
// original iterator's extent from `computation` instead of a parameter.
// Throws a ScriptError naming the format and the attribute when one is
// missing or inconsistent (an iterator_map naming unknown iterators, an
// index map of the wrong arity, a format iterator mapped twice or never).
FormatRule InstantiateFormatRule(const std::string& name, const PrimFunc& format, const PrimFunc& computation);

}  // namespace sparsetir
