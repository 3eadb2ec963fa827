// minijax consumer check: includes only the umbrella header and links minijax::minijax.
// Computes grad(sum(x*x)) at x = [1, 2, 3]; expected 2x = [2, 4, 6] (d/dx_i sum_j x_j^2 = 2 x_i).
#include <minijax/minijax.h>

#include <cmath>
#include <iostream>

int main() {
  mj::Array x = mj::array({1.f, 2.f, 3.f});
  auto f = [](const mj::Array& v) { return mj::sum(v * v); };
  mj::Array g = mj::grad(f)(x);
  std::cout << "grad of sum(x*x) at [1, 2, 3]: " << g << "\n";
  const float expect[3] = {2.f, 4.f, 6.f};
  if (g.shape() != mj::Shape{3}) return 1;
  for (int i = 0; i < 3; ++i)
    if (std::fabs(g.data<float>()[i] - expect[i]) > 1e-6f) return 1;
  std::cout << "consumer OK\n";
  return 0;
}
