// check_thread_stores (stage III, cuda target): a store that every thread of
// an axis runs, into a buffer whose other stores that axis's threads divide
// among them, is refused as a race.
//
// A loop left serial runs on every thread of the block. That is harmless
// where all of them store the same values (a row written back after a lane
// reduction, which every lane holds), but not where other threads already
// update the same elements: a schedule that binds csrmm's k to threadIdx.x
// and leaves csrmm_init's k_init serial has each thread zero the whole row
// while the others accumulate into it. A kernel with a block barrier
// (T.sp.sync_threads) orders its stores itself and is not checked.
#pragma once

#include "ir/function.h"

namespace sparsetir {

// Throws a ScheduleError naming the buffer, the block of the store every
// thread runs and the loop that divides the other stores.
void CheckThreadStores(const PrimFunc& f);

}  // namespace sparsetir
