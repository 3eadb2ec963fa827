// minijax tests' shared main (in place of gtest_main): the configuration every test binary runs under.
// Owns it: 8 virtual devices, so sharded tests run on real runtime devices, and jaxpr verification on.
#include <gtest/gtest.h>

#include "core/config.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  minijax::config().num_cpu_devices = 8;
  minijax::config().verify_jaxprs = true;
  return RUN_ALL_TESTS();
}
