// cuda/pipeline for hand-written kernels under the SIMT emulator, pasted
// after simt_barrier.h (cuda/pipeline includes cuda/barrier): cuda::pipeline
// of one thread (cuda::make_pipeline()) and of a group with its shared state
// in shared memory (make_pipeline(group, &state[, producer_count or role])),
// producer_acquire / producer_commit / consumer_wait / consumer_release,
// cuda::memcpy_async into a pipeline, pipeline_consumer_wait_prior and
// pipeline_producer_commit.
//
// Copies are done at once (one of the orders the GPU may run them in), so a
// thread's own pipeline has nothing to wait for. A group's pipeline orders
// its threads as the GPU's does: each stage has a `produced` and a
// `consumed` count of arrivals with a phase; a commit arrives on the
// stage's `produced` and a release on its `consumed`; consumer_wait waits
// until the stage's use has been produced by every producer, and
// producer_acquire until its previous use has been released by every
// consumer. Waits yield to the runtime (SparsetirSimt::wait_phase), so a
// stage nobody fills is reported as a deadlock.
#pragma once

namespace sparsetir {

inline constexpr const char* kSimtPipeline = R"LIBRARY(
namespace cuda {
enum class pipeline_role { producer, consumer };

// One side of a stage: the arrivals each of its uses expects, those still
// to come in the current one, and how many uses are complete.
struct sparsetir_stage_side {
  ptrdiff_t expected;
  ptrdiff_t pending;
  volatile uint32_t completed;

  void init(ptrdiff_t count) {
    expected = pending = count;
    completed = 0;
  }
  void arrive() {
    if (--pending == 0) {
      pending = expected;
      completed = completed + 1;
    }
  }
  // Returns once more than `uses` uses are complete.
  void wait_past(uint32_t uses) const {
    if (completed == uses) sparsetir_simt->wait_phase(sparsetir_simt->ctx, &completed, uses);
  }
};

template <thread_scope Scope, uint8_t StagesCount> struct pipeline_shared_state {
  static_assert(StagesCount >= 1, "a pipeline has at least one stage");
  sparsetir_stage_side produced[StagesCount];
  sparsetir_stage_side consumed[StagesCount];
  ptrdiff_t producers;  // counted as make_pipeline(group, state, role) runs
};

template <thread_scope Scope> class pipeline {
 public:
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;
  pipeline(pipeline&&) = default;

  void producer_acquire() {
    if (!produced_) return;
    check_role(producer_, "producer_acquire");
    const uint32_t use = head_ / stages_;
    if (use > 0) consumed_[head_ % stages_].wait_past(use - 1);
  }
  void producer_commit() {
    if (!produced_) return;
    check_role(producer_, "producer_commit");
    produced_[head_ % stages_].arrive();
    ++head_;
  }
  void consumer_wait() {
    if (!produced_) return;
    check_role(consumer_, "consumer_wait");
    produced_[tail_ % stages_].wait_past(tail_ / stages_);
  }
  void consumer_release() {
    if (!produced_) return;
    check_role(consumer_, "consumer_release");
    consumed_[tail_ % stages_].arrive();
    ++tail_;
  }

  // Made by make_pipeline: of one thread (no shared state), or of a group.
  pipeline(sparsetir_stage_side* produced, sparsetir_stage_side* consumed, uint32_t stages, bool producer,
           bool consumer)
      : produced_(produced), consumed_(consumed), stages_(stages), producer_(producer), consumer_(consumer) {}

 private:
  static void check_role(bool plays, const char* what) {
    if (!plays) {
      char why[120];
      snprintf(why, sizeof(why), "cuda::pipeline::%s by a thread that has another role in the pipeline", what);
      sparsetir_trap(why);
    }
  }

  sparsetir_stage_side* produced_;
  sparsetir_stage_side* consumed_;
  uint32_t stages_;
  bool producer_, consumer_;
  uint32_t head_ = 0, tail_ = 0;  // this thread's commits and releases so far
};

static inline pipeline<thread_scope_thread> make_pipeline() {
  return pipeline<thread_scope_thread>(nullptr, nullptr, 1, true, true);
}

// The group's pipeline: thread 0 sets the shared state up for `producers`
// producers and `consumers` consumers; the group meets before and after.
template <typename Group, thread_scope Scope, uint8_t StagesCount>
static inline pipeline<Scope> sparsetir_group_pipeline(const Group& group,
                                                       pipeline_shared_state<Scope, StagesCount>* state,
                                                       ptrdiff_t producers, ptrdiff_t consumers, bool producer,
                                                       bool consumer) {
  if (group.thread_rank() == 0) {
    for (int s = 0; s < StagesCount; ++s) {
      state->produced[s].init(producers);
      state->consumed[s].init(consumers);
    }
  }
  group.sync();
  return pipeline<Scope>(state->produced, state->consumed, StagesCount, producer, consumer);
}

// Every thread of the group both produces and consumes.
template <typename Group, thread_scope Scope, uint8_t StagesCount>
static inline pipeline<Scope> make_pipeline(const Group& group, pipeline_shared_state<Scope, StagesCount>* state) {
  const ptrdiff_t size = (ptrdiff_t)group.num_threads();
  return sparsetir_group_pipeline(group, state, size, size, true, true);
}

// The first `producer_count` threads of the group produce, the others consume.
template <typename Group, thread_scope Scope, uint8_t StagesCount>
static inline pipeline<Scope> make_pipeline(const Group& group, pipeline_shared_state<Scope, StagesCount>* state,
                                            size_t producer_count) {
  const ptrdiff_t size = (ptrdiff_t)group.num_threads(), producers = (ptrdiff_t)producer_count;
  const bool producer = (ptrdiff_t)group.thread_rank() < producers;
  return sparsetir_group_pipeline(group, state, producers, size - producers, producer, !producer);
}

// Each thread names its role; the roles are counted first.
template <typename Group, thread_scope Scope, uint8_t StagesCount>
static inline pipeline<Scope> make_pipeline(const Group& group, pipeline_shared_state<Scope, StagesCount>* state,
                                            pipeline_role role) {
  if (group.thread_rank() == 0) state->producers = 0;
  group.sync();
  if (role == pipeline_role::producer) ++state->producers;  // the group's threads are fibers of one host thread
  group.sync();
  const ptrdiff_t size = (ptrdiff_t)group.num_threads(), producers = state->producers;
  group.sync();  // every thread has read the count before thread 0 may reuse the field
  const bool producer = role == pipeline_role::producer;
  return sparsetir_group_pipeline(group, state, producers, size - producers, producer, !producer);
}

template <uint8_t Prior> static inline void pipeline_consumer_wait_prior(pipeline<thread_scope_thread>&) {}
static inline void pipeline_producer_commit(pipeline<thread_scope_thread>& pipe, barrier<thread_scope_block>&) {
  pipe.producer_commit();
}

template <typename Size, thread_scope Scope>
static inline void memcpy_async(void* dst, const void* src, Size size, pipeline<Scope>&) {
  sparsetir_copy_share(dst, src, size, 0, 1);
}
template <typename Group, typename Size, thread_scope Scope>
static inline void memcpy_async(const Group& group, void* dst, const void* src, Size size, pipeline<Scope>&) {
  sparsetir_copy_share(dst, src, size, (size_t)group.thread_rank(), (size_t)group.num_threads());
}
}  // namespace cuda
)LIBRARY";

}  // namespace sparsetir
