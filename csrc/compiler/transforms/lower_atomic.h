// lower_atomic (stage I): accumulations that parallel iterations may share
// become atomic.
//
// An iteration tagged {"atomic": True} (format_decompose tags the copies whose
// output rows come through a row map: two ELL rows of a bucket may belong to
// one row of the result) adds into elements that other iterations of its
// spatial loops may add into at the same time. Each of its stores of the
// accumulation form X[idx] = X[idx] + v (or v + X[idx]) becomes
// T.atomic_add(X[idx], v); code generation turns that into an indivisible
// update (a compare-and-swap loop on the CPU, atomicAdd on a GPU). Any other
// store, or a T.init(), in such an iteration is an error naming it: it cannot
// be made safe by atomics.
//
// Before:  with T.sp.iteration([O_ell, I_ell, J_ell, K], "SSRS", "csrmm_ell") as [o, i, j, k]:
//              T.sp.iteration_attr({"accumulate": True, "atomic": True})
//              C[i, k] = C[i, k] + A_ell[o, i, j] * B[j, k]
// After:       T.atomic_add(C[i, k], A_ell[o, i, j] * B[j, k])
#pragma once

#include "ir/function.h"

namespace sparsetir {

PrimFunc LowerAtomic(const PrimFunc& f);

}  // namespace sparsetir
