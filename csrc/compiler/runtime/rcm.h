// Reverse Cuthill-McKee relabelling of a square sparse structure, torch-free.
//
// SpMM gathers the dense rows named by each row's columns. On a mesh stored in
// an arbitrary vertex order those rows lie anywhere (mdual: bandwidth 258,183
// of 258,569), so every gather misses the caches. Relabelling the vertices in
// RCM order (breadth-first from a peripheral vertex, neighbours by increasing
// degree, reversed) puts each row's columns near the row: neighbouring rows
// gather the same dense rows while they are cached. The relabelling is done
// once per graph; the features are permuted once by the user (the graph's
// node order is theirs to choose), not on every call.
#pragma once

#include <cstdint>
#include <vector>

namespace sparsetir {

// The RCM order of the vertices of the n x n structure: order[new] = old.
// Neighbours are those of the pattern A + A^T (an unsymmetric pattern is made
// symmetric; the diagonal is ignored). Each connected component starts from a
// pseudo-peripheral vertex (George and Liu's search from a vertex of least
// degree); components come in order of their least-degree vertex. The
// structure must be valid (ValidateCsr) with every index < n.
template <typename Index>
std::vector<Index> ReverseCuthillMcKee(const Index* indptr, const Index* indices, int64_t n);

// P A P^T for order[new] = old: row i of the result is row order[i] of A,
// its columns relabelled and sorted. `source` maps each non-zero of the
// result to its position in A (new_values = values[source]).
template <typename Index>
struct PermutedCsr {
  std::vector<Index> indptr;    // n + 1
  std::vector<Index> indices;   // nnz
  std::vector<int64_t> source;  // nnz
};

template <typename Index>
PermutedCsr<Index> PermuteSymmetric(const Index* indptr, const Index* indices, int64_t n,
                                    const std::vector<Index>& order);

}  // namespace sparsetir
