// minijax public-API bad-input cases: meshes, shardings, sharded arrays, reshards, devices, processes.
// Owns sharding_cases(): Mesh and NamedSharding members, device_put to shardings, reshard plans.
#include "api/bad_input.h"

namespace bad_input {
namespace {
namespace mj = minijax;
using mj::Array;
using mj::Mesh;
using mj::NamedSharding;
using mj::P;
using mj::ShapeError;
using mj::ShardingError;
using mj::ValueError;

std::shared_ptr<const Mesh> mesh4() { return std::make_shared<Mesh>(std::vector<int>{0, 1, 2, 3}, mj::Shape{4}, std::vector<std::string>{"x"}); }
NamedSharding on_x() { return NamedSharding{mesh4(), P("x")}; }
NamedSharding on_y() { return NamedSharding{mesh4(), P("y")}; }
mj::Sharding sh_x(int64_t rank) { return mj::to_sharding(on_x(), rank); }

}  // namespace

// For declarations that take no call site (the library's line is recorded).

std::vector<Case> sharding_cases() {
  return {
      BAD("minijax::Mesh::Mesh", ShardingError, Mesh({0, 1, 2}, {2}, {"x"}), "Mesh", "3", "[2]"),
      BAD("minijax::make_mesh", ShardingError, mj::make_mesh({4, 4}, {"data", "model"}), "make_mesh", "[4,4]",
          "needs 16 devices"),
      BAD("minijax::Mesh::axis_index", ShardingError, mesh4()->axis_index("z"), "Mesh::axis_index", "'z'", "Mesh('x': 4)"),
      BAD("minijax::Mesh::axis_size", ShardingError, mesh4()->axis_size("z"), "Mesh::axis_size", "'z'", "Mesh('x': 4)"),
      BAD_ANY_SITE("minijax::Mesh::coords_of", mj::IndexError, mesh4()->coords_of(9), "coords_of", "9", "4 devices"),
      BAD_ANY_SITE("minijax::Mesh::position_of", mj::IndexError, mesh4()->position_of({7}), "position_of", "7"),
      BAD_ANY_SITE("minijax::Mesh::device_at", mj::IndexError, mesh4()->device_at({1, 1}), "position_of", "2 coordinates"),
      BAD("minijax::to_sharding", ShardingError, mj::to_sharding(on_y(), 2), "y", "Mesh('x': 4)"),
      BAD("minijax::device_put", ShardingError, mj::device_put(x23(), on_y()), "device_put", "y"),
      BAD("minijax::with_sharding_constraint", ShardingError, mj::with_sharding_constraint(x23(), on_y()),
          "with_sharding_constraint", "y"),
      BAD("minijax::reshard_plan", ShardingError,
          mj::reshard_plan(on_x(), NamedSharding{mesh4(), P(mj::None{}, "x")}, mj::ShapedArray{{8}}), "reshard", "x"),
      BAD("minijax::plan_reshard", ShardingError,
          mj::plan_reshard(sh_x(1), sh_x(2), mj::ShapedArray{{8}}), "plan_reshard", "rank 1"),
      BAD("minijax::make_sharded_array", ShardingError,
          mj::make_sharded_array(mj::ShapedArray{{8}}, sh_x(1), {iota_f32({2}), iota_f32({2})}), "make_sharded_array", "2", "4"),
      BAD("minijax::local_shards", ShardingError, mj::local_shards(iota_f32({2, 2}), sh_x(1)), "local_shards", "[2,2]"),
      BAD("minijax::device_boxes", ShardingError, mj::device_boxes(sh_x(2), {8}), "device_boxes", "[8]"),
      BAD_ANY_SITE("minijax::collective_groups", ShardingError, mj::collective_groups(*mesh4(), {"q"}), "'q'"),
      BAD("minijax::set_num_devices", ShardingError, mj::set_num_devices(0), "set_num_devices", "0"),
      BAD("minijax::distributed::initialize", ValueError, mj::distributed::initialize(0), "distributed::initialize",
          "num_processes = 0"),
      BAD("minijax::device", ValueError, mj::device(999), "device", "999"),
      BAD("minijax::make_array_from_callback", ShapeError,
          mj::make_array_from_callback({8}, on_x(), [](const mj::ShardIndex&) { return iota_f32({3}); }),
          "make_array_from_callback", "f32[3]", "[0:2]", "process 0"),
      BAD("minijax::make_array_from_single_device_arrays", ValueError,
          mj::make_array_from_single_device_arrays({8}, on_x(), {iota_f32({2})}), "make_array_from_single_device_arrays",
          "1 arrays", "4 devices"),
      BAD("minijax::make_array_from_process_local_data", ShapeError,
          mj::make_array_from_process_local_data(on_x(), iota_f32({3}), mj::Shape{8}),
          "make_array_from_process_local_data", "f32[3]", "[8]", "process 0"),
      BAD("minijax::multihost_utils::process_allgather", ValueError,
          mj::multihost_utils::process_allgather(iota_f32({}), true), "process_allgather", "rank-0"),
      BAD("minijax::memory_stats", ValueError, mj::memory_stats(0, "hbm"), "memory_stats", "hbm"),
      BAD("minijax::reset_peak_memory_stats", ValueError, mj::reset_peak_memory_stats(-1), "reset_peak_memory_stats", "-1"),
      BAD_ANY_SITE("minijax::sharding_rule_for", ShardingError, mj::sharding_rule_for("scan", {}, {}, mj::Params{}), "scan"),
  };
}

}  // namespace bad_input
