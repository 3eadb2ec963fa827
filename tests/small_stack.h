// minijax test helper: runs a test body on a thread with a small (1 MB) stack.
// Owns run_on_small_stack, used by the tests of long programs (tests/jit, tests/long).
#pragma once
#include <pthread.h>

#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

namespace minijax_test {

/// The stack of run_on_small_stack's thread: 1 MB, a quarter of what many thread pools give
/// their workers and an eighth of Linux's 8 MB main thread. Sanitizer builds get 8 MB, since
/// AddressSanitizer's redzones make every frame several times larger.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr size_t kSmallStackBytes = size_t(8) << 20;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr size_t kSmallStackBytes = size_t(8) << 20;
#else
inline constexpr size_t kSmallStackBytes = size_t(1) << 20;
#endif
#else
inline constexpr size_t kSmallStackBytes = size_t(1) << 20;
#endif

/// Runs f on a new thread created with pthread_attr_setstacksize(bytes) and waits for it. An
/// exception f throws is rethrown here; googletest's EXPECT/ASSERT failures inside f are
/// recorded for the running test (googletest is thread-safe on pthreads; an ASSERT returns from
/// f only). A stack overflow in f kills the process (SIGSEGV), which fails the test binary.
inline void run_on_small_stack(const std::function<void()>& f, size_t bytes = kSmallStackBytes) {
  struct Job {
    const std::function<void()>* f;
    std::exception_ptr error;
  } job{&f, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (int rc = pthread_attr_setstacksize(&attr, bytes)) {
    pthread_attr_destroy(&attr);
    throw std::runtime_error(std::string("pthread_attr_setstacksize: ") + std::strerror(rc));
  }
  pthread_t t;
  int rc = pthread_create(
      &t, &attr,
      [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        try {
          (*j->f)();
        } catch (...) {
          j->error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  if (rc) throw std::runtime_error(std::string("pthread_create: ") + std::strerror(rc));
  pthread_join(t, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace minijax_test
