#include "runtime/rcm.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "runtime/csr_structure.h"

namespace sparsetir {
namespace {

// The pattern A + A^T as two CSR structures read together: the out-edges
// (A's rows) and the in-edges (A^T's rows).
template <typename Index>
struct Neighbours {
  const Index* indptr;
  const Index* indices;
  std::vector<Index> t_indptr, t_indices;
  std::vector<int64_t> degree;

  Neighbours(const Index* ip, const Index* ix, int64_t n) : indptr(ip), indices(ix), t_indptr(n + 1), degree(n) {
    const int64_t nnz = ip[n];
    t_indices.resize(nnz);
    std::vector<Index> perm(nnz);
    TransposeCsr(ip, ix, n, n, t_indptr.data(), t_indices.data(), perm.data());
    for (int64_t v = 0; v < n; ++v) degree[v] = (ip[v + 1] - ip[v]) + (t_indptr[v + 1] - t_indptr[v]);
  }

  template <typename Visit>
  void ForEach(int64_t v, const Visit& visit) const {
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) visit(static_cast<int64_t>(indices[e]));
    for (int64_t e = t_indptr[v]; e < t_indptr[v + 1]; ++e) visit(static_cast<int64_t>(t_indices[e]));
  }
};

// Breadth-first levels from `root` over the vertices not yet ordered:
// `level` (-1 = unreached) is set for the component and the reached vertices
// are returned in order. The caller resets `level` through that list.
template <typename Index>
std::vector<int64_t> Levels(const Neighbours<Index>& g, int64_t root, std::vector<int64_t>& level) {
  std::vector<int64_t> reached{root};
  level[root] = 0;
  for (size_t head = 0; head < reached.size(); ++head) {
    const int64_t v = reached[head];
    g.ForEach(v, [&](int64_t w) {
      if (level[w] < 0) {
        level[w] = level[v] + 1;
        reached.push_back(w);
      }
    });
  }
  return reached;
}

// George and Liu: move to a least-degree vertex of the last level while that
// lengthens the level structure. A few rounds suffice; each is one BFS.
template <typename Index>
int64_t PseudoPeripheral(const Neighbours<Index>& g, int64_t start, std::vector<int64_t>& level) {
  constexpr int kMaxRounds = 8;
  int64_t root = start, depth = -1;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<int64_t> reached = Levels(g, root, level);
    const int64_t last = level[reached.back()];
    int64_t next = reached.back();
    for (int64_t v : reached) {
      if (level[v] == last && g.degree[v] < g.degree[next]) next = v;
    }
    for (int64_t v : reached) level[v] = -1;
    if (last <= depth) break;
    depth = last;
    if (next == root) break;
    root = next;
  }
  return root;
}

}  // namespace

template <typename Index>
std::vector<Index> ReverseCuthillMcKee(const Index* indptr, const Index* indices, int64_t n) {
  const Neighbours<Index> g(indptr, indices, n);
  std::vector<int64_t> by_degree(n);
  std::iota(by_degree.begin(), by_degree.end(), 0);
  std::stable_sort(by_degree.begin(), by_degree.end(),
                   [&](int64_t a, int64_t b) { return g.degree[a] < g.degree[b]; });
  std::vector<int64_t> level(n, -1);
  std::vector<char> ordered(n, 0);
  std::vector<Index> order;
  order.reserve(n);
  std::vector<int64_t> fresh;
  for (int64_t start : by_degree) {
    if (ordered[start]) continue;
    const int64_t root = PseudoPeripheral(g, start, level);
    size_t head = order.size();
    order.push_back(static_cast<Index>(root));
    ordered[root] = 1;
    for (; head < order.size(); ++head) {
      fresh.clear();
      g.ForEach(order[head], [&](int64_t w) {
        if (!ordered[w]) {
          ordered[w] = 1;
          fresh.push_back(w);
        }
      });
      std::sort(fresh.begin(), fresh.end(), [&](int64_t a, int64_t b) {
        return g.degree[a] != g.degree[b] ? g.degree[a] < g.degree[b] : a < b;
      });
      for (int64_t w : fresh) order.push_back(static_cast<Index>(w));
    }
  }
  std::reverse(order.begin(), order.end());
  return order;
}

template <typename Index>
PermutedCsr<Index> PermuteSymmetric(const Index* indptr, const Index* indices, int64_t n,
                                    const std::vector<Index>& order) {
  std::vector<Index> inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[order[i]] = static_cast<Index>(i);
  PermutedCsr<Index> out;
  out.indptr.resize(n + 1);
  out.indptr[0] = 0;
  for (int64_t i = 0; i < n; ++i) out.indptr[i + 1] = out.indptr[i] + (indptr[order[i] + 1] - indptr[order[i]]);
  out.indices.resize(indptr[n]);
  out.source.resize(indptr[n]);
  std::vector<std::pair<Index, int64_t>> row;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t old = order[i];
    row.clear();
    for (int64_t e = indptr[old]; e < indptr[old + 1]; ++e) row.emplace_back(inverse[indices[e]], e);
    std::sort(row.begin(), row.end());  // by new column, then by position: duplicates keep their order
    int64_t next = out.indptr[i];
    for (const auto& [column, e] : row) {
      out.indices[next] = column;
      out.source[next++] = e;
    }
  }
  return out;
}

template std::vector<int32_t> ReverseCuthillMcKee<int32_t>(const int32_t*, const int32_t*, int64_t);
template std::vector<int64_t> ReverseCuthillMcKee<int64_t>(const int64_t*, const int64_t*, int64_t);
template PermutedCsr<int32_t> PermuteSymmetric<int32_t>(const int32_t*, const int32_t*, int64_t,
                                                        const std::vector<int32_t>&);
template PermutedCsr<int64_t> PermuteSymmetric<int64_t>(const int64_t*, const int64_t*, int64_t,
                                                        const std::vector<int64_t>&);

}  // namespace sparsetir
