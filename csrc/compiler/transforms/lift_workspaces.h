// lift_workspaces (stage III, the last pass): a buffer the function allocates
// for its whole body (a workspace: T.alloc_buffer at function level, such as
// a row maximum a softmax keeps between two loops) becomes a parameter that
// the host allocates, zeroed, at each call, bound to a match buffer in scope
// "workspace". So no kernel allocates memory itself: a CPU kernel has no
// calloc / free inside it, and a GPU kernel could not have one. The host
// (runtime/kernel.h) sizes a workspace from the scalar arguments and the
// structure arrays, as it checks any other buffer, and leaves it out of the
// kernel's call signature.
#pragma once

#include "ir/function.h"

namespace sparsetir {

inline constexpr const char* kWorkspaceScope = "workspace";

PrimFunc LiftWorkspaces(const PrimFunc& f);

// True for a buffer that lift_workspaces made (a host-allocated workspace).
bool IsWorkspace(const BufferNode* b);

}  // namespace sparsetir
