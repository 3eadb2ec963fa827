// Tests of the samples' progress line (samples/common/progress.h): its text, '\r' redraws and
// erasure when enabled, silence on a file, and isatty deciding by default (a pseudo-terminal).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "samples/common/progress.h"

using minijax::samples::ProgressLine;

namespace {

// Everything written to `f` (a tmpfile) so far.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += char(c);
  return s;
}

}  // namespace

TEST(ProgressLine, TextNamesStepsTimeAndRunningLoss) {
  EXPECT_EQ(ProgressLine::text(2, 120, 469, 3.44, 0.38214),
            "epoch 2  step 120/469  3.4 ms/step  loss 0.3821");
  EXPECT_EQ(ProgressLine::text(1, 0, 0, 0, 0), "epoch 1  step 0/0  0.0 ms/step  loss 0.0000");
}

TEST(ProgressLine, SilentWhenStdoutIsNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(minijax::samples::is_terminal(f));
  EXPECT_FALSE(minijax::samples::is_terminal(nullptr));
  ProgressLine p(f);  // a regular file: isatty is false
  EXPECT_FALSE(p.enabled());
  p.begin(1, 3);
  for (double l : {1.0, 2.0, 3.0}) p.step(l);
  p.end();
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(ProgressLine, RedrawsInPlaceAndErasesWhenEnabled) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine p(f, true, 0.0);  // forced on, every step drawn
  ASSERT_TRUE(p.enabled());
  p.begin(3, 2);
  p.step(1.0);
  p.step(2.0);  // running loss (1 + 2) / 2
  const std::string drawn = contents(f);
  EXPECT_EQ(drawn.find('\n'), std::string::npos) << drawn;  // never a new line
  ASSERT_EQ(drawn.rfind("\repoch 3  step 1/2  ", 0), 0u) << drawn;
  const size_t second = drawn.find("\repoch 3  step 2/2  ");
  ASSERT_NE(second, std::string::npos) << drawn;
  EXPECT_NE(drawn.find("loss 1.0000"), std::string::npos) << drawn;
  EXPECT_NE(drawn.find("loss 1.5000", second), std::string::npos) << drawn;
  const size_t width = drawn.size() - second - 1;  // the second line's length
  p.end();
  const std::string all = contents(f);
  EXPECT_EQ(all.substr(drawn.size()), "\r" + std::string(width, ' ') + "\r");
  p.end();  // nothing drawn: nothing erased
  EXPECT_EQ(contents(f), all);
  // A new epoch restarts the count and the loss.
  p.begin(4, 5);
  p.step(7.0);
  EXPECT_NE(contents(f).find("\repoch 4  step 1/5  ", all.size()), std::string::npos);
  EXPECT_NE(contents(f).find("loss 7.0000", all.size()), std::string::npos);
  std::fclose(f);
}

TEST(ProgressLine, DrawsByDefaultOnAPseudoTerminal) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  // A root without a devpts mount (a chroot that binds /dev alone) has no pseudo-terminals:
  // nothing to draw on, so the test cannot run there (posix_openpt(3): ENOENT, ENODEV).
  if (master < 0 && (errno == ENOENT || errno == ENODEV))
    GTEST_SKIP() << "no pseudo-terminals here: posix_openpt: " << std::strerror(errno);
  ASSERT_GE(master, 0) << std::strerror(errno);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  std::FILE* tty = ::fdopen(slave, "w");
  ASSERT_NE(tty, nullptr);
  EXPECT_TRUE(minijax::samples::is_terminal(tty));
  {
    ProgressLine p(tty);
    EXPECT_TRUE(p.enabled());
    p.begin(1, 1);
    p.step(0.5);
    p.end();
  }
  std::string seen;
  char buf[256];
  pollfd pfd{master, POLLIN, 0};
  while (::poll(&pfd, 1, 200) > 0) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, size_t(n));
  }
  EXPECT_EQ(seen.rfind("\repoch 1  step 1/1  ", 0), 0u) << seen;
  EXPECT_NE(seen.find("loss 0.5000\r"), std::string::npos) << seen;
  std::fclose(tty);
  ::close(master);
}
