// format_decompose (stage I): computes on composable formats.
//
// Each rule (see format_rule.h) replaces a buffer of the computation by the
// same data stored in another format. For every rule the output has
//   - a preprocess iteration over the new format that copies the values in
//     (tagged T.sp.iteration_attr({"preprocess": True})), and
//   - for every iteration that read the buffer, a copy of it over the new
//     format's iterators: each original iterator is replaced by the ones the
//     iterator_map names (with its role), the buffer is read at the new
//     iterators' own coordinates, and every other use of an original
//     coordinate becomes the inverse index map's expression.
// The runtime gives each format its share of the non-zeros, so the results of
// the copies add up: the original T.init() moves to an iteration of its own
// over the spatial iterators ("<name>_init", tagged {"init": True}) that runs
// once before them, and the copies only accumulate (tagged {"accumulate": True}). (The design document's
// example keeps T.init() in every copy, which would let each format's init
// erase what the formats before it added.) An iteration that writes a
// rewritten buffer (an SDDMM's output moved to the format too) gives each copy
// an output of its own; those copies keep their T.init(). Coordinates computed by an inverse
// map (io * 4 + ii) may pass the original extent where a format pads (m not a
// multiple of 4), so the copies and the preprocess are guarded by it.
// The format's parameters are appended to the signature with the rule's name
// as suffix, as are its iterators and buffers; the function gets
// {"composable": 1}.
//
// Before:  with T.sp.iteration([I, J, K], "SRS", "csrmm") as [i, j, k]:
//              with T.init():
//                  C[i, k] = 0.0
//              C[i, k] = C[i, k] + A[i, j] * B[j, k]
// After (a BSR(4) rule named "4"):
//          with T.sp.iteration([IO_4, JO_4, II_4, JI_4], "SSSS", "rewrite_A_4") as [io_4, jo_4, ii_4, ji_4]:
//              T.sp.iteration_attr({"preprocess": True})
//              A_4[io_4, jo_4, ii_4, ji_4] = T.if_then_else(io_4 * 4 + ii_4 < m and jo_4 * 4 + ji_4 < n,
//                                                           A[io_4 * 4 + ii_4, jo_4 * 4 + ji_4], 0.0)
//          with T.sp.iteration([I, K], "SS", "csrmm_init") as [i, k]:
//              T.sp.iteration_attr({"init": True})
//              C[i, k] = 0.0
//          with T.sp.iteration([IO_4, II_4, JO_4, JI_4, K], "SSRRS", "csrmm_4") as [io_4, ii_4, jo_4, ji_4, k]:
//              T.sp.iteration_attr({"accumulate": True})
//              if io_4 * 4 + ii_4 < m and jo_4 * 4 + ji_4 < n:
//                  C[io_4 * 4 + ii_4, k] = C[io_4 * 4 + ii_4, k] + A_4[io_4, jo_4, ii_4, ji_4] * B[jo_4 * 4 + ji_4, k]
//
// Inverse-map results that are a bare coordinate of the format (an ELL row's
// column) are trusted to lie within the original extent and not guarded.
// Compute copies whose spatial coordinates go through a load (a row map) may
// send several of the format's rows to one output row; they are tagged
// {"atomic": True} so that lower_atomic makes their accumulation atomic.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/function.h"

namespace sparsetir {

// rules: (name, format function) pairs; the name suffixes what the rule adds.
// disjoint: the formats cover disjoint sets of the output's elements (they
// partition the rows, as hyb buckets without split rows do), so each copy
// initializes and writes its own outputs: every copy keeps the T.init(), as
// in the design document's example, and nothing accumulates or is atomic.
PrimFunc FormatDecompose(const PrimFunc& f, const std::vector<std::pair<std::string, PrimFunc>>& rules,
                         bool disjoint = false);

// The preprocess iterations of a decomposed function alone, and the rest
// (optionally without the init iterations, for formats that accumulate into
// an output the caller zeroed). Parameters, iterators and buffers the part
// does not use are dropped, so the compute part needs only the new formats.
PrimFunc PreprocessPart(const PrimFunc& decomposed);
PrimFunc ComputePart(const PrimFunc& decomposed, bool with_init = true);

}  // namespace sparsetir
