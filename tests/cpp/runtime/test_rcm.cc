// Reverse Cuthill-McKee: the order is a permutation; a shuffled path and a
// shuffled grid get their bandwidth back (1 and the grid's side); components
// and isolated vertices are all ordered; an unsymmetric pattern is ordered as
// A + A^T; PermuteSymmetric equals a dense P A P^T with duplicates kept in
// order. int32 and int64.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "runtime/rcm.h"

namespace sparsetir {
namespace {

template <typename Index>
struct Graph {
  std::vector<Index> indptr, indices;
};

// CSR of the given (row, column) pairs over n vertices, rows in order.
template <typename Index>
Graph<Index> FromEdges(int64_t n, std::vector<std::pair<int64_t, int64_t>> edges) {
  std::stable_sort(edges.begin(), edges.end(), [](auto a, auto b) { return a.first < b.first; });
  Graph<Index> g;
  g.indptr.assign(n + 1, 0);
  for (auto [r, c] : edges) {
    ++g.indptr[r + 1];
    g.indices.push_back(static_cast<Index>(c));
  }
  for (int64_t r = 0; r < n; ++r) g.indptr[r + 1] += g.indptr[r];
  return g;
}

// Both directions of every undirected edge, vertices relabelled by `label`.
std::vector<std::pair<int64_t, int64_t>> Symmetric(const std::vector<std::pair<int64_t, int64_t>>& edges,
                                                   const std::vector<int64_t>& label) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto [a, b] : edges) {
    out.emplace_back(label[a], label[b]);
    out.emplace_back(label[b], label[a]);
  }
  return out;
}

std::vector<int64_t> Shuffled(int64_t n, unsigned seed) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  std::shuffle(p.begin(), p.end(), std::mt19937(seed));
  return p;
}

template <typename Index>
int64_t BandwidthAfter(const Graph<Index>& g, const std::vector<Index>& order) {
  const int64_t n = static_cast<int64_t>(order.size());
  std::vector<int64_t> inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[order[i]] = i;
  int64_t band = 0;
  for (int64_t r = 0; r < n; ++r) {
    for (Index e = g.indptr[r]; e < g.indptr[r + 1]; ++e) {
      band = std::max<int64_t>(band, std::abs(inverse[r] - inverse[g.indices[e]]));
    }
  }
  return band;
}

template <typename Index>
void ExpectPermutation(const std::vector<Index>& order, int64_t n) {
  ASSERT_EQ(static_cast<int64_t>(order.size()), n);
  std::set<int64_t> seen(order.begin(), order.end());
  EXPECT_EQ(static_cast<int64_t>(seen.size()), n);
  if (n > 0) {
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), n - 1);
  }
}

template <typename Index>
void CheckPathAndGrid() {
  const int64_t n = 200;
  std::vector<std::pair<int64_t, int64_t>> path;
  for (int64_t v = 0; v + 1 < n; ++v) path.emplace_back(v, v + 1);
  auto g = FromEdges<Index>(n, Symmetric(path, Shuffled(n, 1)));
  auto order = ReverseCuthillMcKee(g.indptr.data(), g.indices.data(), n);
  ExpectPermutation(order, n);
  EXPECT_EQ(BandwidthAfter(g, order), 1);

  const int64_t side = 20;
  std::vector<std::pair<int64_t, int64_t>> grid;
  for (int64_t r = 0; r < side; ++r) {
    for (int64_t c = 0; c < side; ++c) {
      if (c + 1 < side) grid.emplace_back(r * side + c, r * side + c + 1);
      if (r + 1 < side) grid.emplace_back(r * side + c, (r + 1) * side + c);
    }
  }
  auto mesh = FromEdges<Index>(side * side, Symmetric(grid, Shuffled(side * side, 2)));
  auto mesh_order = ReverseCuthillMcKee(mesh.indptr.data(), mesh.indices.data(), side * side);
  ExpectPermutation(mesh_order, side * side);
  EXPECT_LE(BandwidthAfter(mesh, mesh_order), side + 1);
}

TEST(Rcm, ShuffledPathAndGridGetTheirBandBack) {
  CheckPathAndGrid<int32_t>();
  CheckPathAndGrid<int64_t>();
}

TEST(Rcm, ComponentsIsolatedVerticesAndEmptyGraphs) {
  // Two triangles, a self loop and two isolated vertices.
  auto g = FromEdges<int64_t>(9, {{0, 1}, {1, 0}, {1, 2}, {2, 1}, {0, 2}, {2, 0}, {5, 6}, {6, 5}, {6, 7}, {7, 6},
                                  {5, 7}, {7, 5}, {4, 4}});
  auto order = ReverseCuthillMcKee(g.indptr.data(), g.indices.data(), 9);
  ExpectPermutation(order, 9);
  EXPECT_LE(BandwidthAfter(g, order), 2);
  std::vector<int32_t> indptr = {0};
  EXPECT_TRUE(ReverseCuthillMcKee<int32_t>(indptr.data(), nullptr, 0).empty());
  std::vector<int32_t> one = {0, 0};
  EXPECT_EQ(ReverseCuthillMcKee<int32_t>(one.data(), nullptr, 1), std::vector<int32_t>{0});
}

TEST(Rcm, UnsymmetricPatternIsOrderedAsItsSymmetricPart) {
  // Only the upper half of a shuffled path: A + A^T is the whole path.
  const int64_t n = 50;
  auto label = Shuffled(n, 3);
  std::vector<std::pair<int64_t, int64_t>> upper;
  for (int64_t v = 0; v + 1 < n; ++v) upper.emplace_back(std::min(label[v], label[v + 1]), std::max(label[v], label[v + 1]));
  auto g = FromEdges<int32_t>(n, upper);
  auto order = ReverseCuthillMcKee(g.indptr.data(), g.indices.data(), n);
  ExpectPermutation(order, n);
  EXPECT_EQ(BandwidthAfter(g, order), 1);
}

TEST(Rcm, PermuteSymmetricEqualsDense) {
  // 4 x 4 with a duplicate (1, 3) and unsorted columns.
  auto g = FromEdges<int32_t>(4, {{0, 2}, {0, 0}, {1, 3}, {1, 1}, {1, 3}, {3, 0}});
  std::vector<int32_t> order = {3, 1, 0, 2};  // new -> old
  PermutedCsr<int32_t> p = PermuteSymmetric(g.indptr.data(), g.indices.data(), 4, order);
  EXPECT_EQ(p.indptr, (std::vector<int32_t>{0, 1, 4, 6, 6}));
  // New row 0 = old row 3: (3, 0) -> (0, 2). New row 1 = old row 1: columns 3, 1, 3 -> 0, 1, 0, sorted with
  // the duplicates in their order. New row 2 = old row 0: columns 2, 0 -> 3, 2.
  EXPECT_EQ(p.indices, (std::vector<int32_t>{2, 0, 0, 1, 2, 3}));
  EXPECT_EQ(p.source, (std::vector<int64_t>{5, 2, 4, 3, 1, 0}));
}

}  // namespace
}  // namespace sparsetir
