// minijax consumer check: a user program that includes only <minijax/minijax.h> and links minijax::minijax.
// Uses grad, jit, a sharded jit on a (4, 2) mesh and save_safetensors/load_safetensors; exits 1 on a wrong value.
#include <minijax/minijax.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

namespace {

bool near(const mj::Array& a, const float* expect, int n) {
  if (a.shape() != mj::Shape{n}) return false;
  for (int i = 0; i < n; ++i)
    if (std::fabs(a.data<float>()[i] - expect[i]) > 1e-5f) return false;
  return true;
}

}  // namespace

int main() {
  mj::set_num_devices(8);  // before the devices are first used
  mj::Array x = mj::array({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f});
  auto f = [](const mj::Array& v) { return mj::sum(v * v); };

  // grad: d/dx_i sum_j x_j^2 = 2 x_i.
  const float twice[8] = {2.f, 4.f, 6.f, 8.f, 10.f, 12.f, 14.f, 16.f};
  mj::Array g = mj::grad(f)(x);
  if (!near(g, twice, 8)) return 1;

  // jit of the gradient: the same values, compiled.
  auto step = mj::jit([](const mj::Array& v) { return mj::grad([](const mj::Array& w) { return mj::sum(w * w); })(v); });
  if (!near(step(x), twice, 8)) return 1;

  // A sharded jit: x split over the mesh's "data" axis (4 shards of 2), 3 * x + 1 computed per shard.
  mj::Mesh mesh = mj::make_mesh({4, 2}, {"data", "model"});
  mj::NamedSharding rows(mesh, mj::PartitionSpec("data"));
  auto affine = mj::jit([](const mj::Array& v) { return v * 3.0 + 1.0; }, {.in_shardings = {rows}});
  const float affine_expect[8] = {4.f, 7.f, 10.f, 13.f, 16.f, 19.f, 22.f, 25.f};
  mj::Array y = affine(x);
  if (!y.is_sharded() || !near(y, affine_expect, 8)) return 1;

  // safetensors: saved and read back unchanged.
  std::map<std::string, mj::Array> params{{"w", x}, {"g", g}};
  const std::string path = "consumer_params.safetensors";
  mj::save_safetensors(path, params);
  std::map<std::string, mj::Array> back = mj::load_safetensors(path);
  std::remove(path.c_str());
  const float ones_to_eight[8] = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f};
  if (back.size() != 2 || !near(back.at("w"), ones_to_eight, 8) || !near(back.at("g"), twice, 8)) return 1;

  std::cout << "grad of sum(x*x): " << g << "\n" << "consumer OK\n";
  return 0;
}
