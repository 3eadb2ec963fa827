// minijax runtime parallel loops: oneTBB's parallel_for over blocks of [0, n), with the ordering
// oneTBB provides (caller before tasks, tasks before the return) told to ThreadSanitizer.
#pragma once
#include <cstdint>
#include <type_traits>

namespace minijax {

/// The non-template core of parallel_for_blocks: calls block(ctx, lo, hi) for blocks [lo, hi)
/// covering [0, n), each of at most `grain` indices (oneTBB's simple_partitioner halves a range
/// while it holds more than `grain`: the blocks depend only on n and grain, never on the threads
/// available), as oneTBB tasks; returns when all have run. An exception from a block propagates
/// as oneTBB propagates it (the first one; the other blocks are cancelled).
///
/// Under ThreadSanitizer (tools/sanitize.sh tsan): oneTBB hands the blocks to its workers and
/// waits for them inside libtbb, which Debian does not build with tsan, so tsan would see neither
/// edge. This function releases one synchronization object before the loop, which each block
/// acquires at its start, and another after each block, which the caller acquires after the loop
/// (__tsan_release/__tsan_acquire): blocks are ordered after the caller's past and before its
/// future, never after each other, so the blocks and everything they call are checked like any
/// other code, races between two blocks included. Its source file, which
/// alone instantiates oneTBB's templates, is compiled without tsan (CMakeLists.txt), so oneTBB's
/// own bookkeeping is as invisible to tsan as the rest of libtbb, and needs no suppression.
void parallel_for_blocks(int64_t n, int64_t grain, void (*block)(void* ctx, int64_t lo, int64_t hi), void* ctx);

/// parallel_for_blocks calling body(lo, hi).
template <class Body>
void parallel_for_blocks(int64_t n, int64_t grain, Body&& body) {
  using B = std::remove_reference_t<Body>;
  parallel_for_blocks(
      n, grain, [](void* ctx, int64_t lo, int64_t hi) { (*static_cast<B*>(ctx))(lo, hi); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace minijax
