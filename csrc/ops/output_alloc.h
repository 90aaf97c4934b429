// Outputs of the operators, allocated so that their first touch is cheap.
//
// A fresh multi-megabyte output comes from the OS (glibc maps blocks over
// 32 MiB anew on every allocation) and the kernel then faults it in 4 KiB at
// a time: for the 37 MB output of an SpMM at K = 256 that costs more than
// the multiplication (email-Enron: 13.5 ms into a reused output, 35 ms into
// a fresh one). Two remedies, for outputs of 4 MiB and more:
//  - recycling: the storage of the last few large outputs is kept; once the
//    caller has released one (the pool holds the only reference) the next
//    output of the same size reuses it, already mapped. An inference loop
//    that drops each result before the next call pays no faults at all;
//    outputs kept alive (saved for backward, stored) are never touched.
//  - huge pages: a new output's 2 MiB-aligned interior is advised
//    MADV_HUGEPAGE before it is touched, so where transparent huge pages are
//    enabled on request it faults in 2 MiB at a time (35 -> 23 ms above).
#pragma once

#include <ATen/ATen.h>

namespace sparsetir::ops {

at::Tensor EmptyOutput(at::IntArrayRef sizes, const at::TensorOptions& options);

// Releases the recycled storages (st.clear_graph_cache calls it).
void ReleaseRecycledOutputs();

}  // namespace sparsetir::ops
