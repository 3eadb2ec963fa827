// minijax device meshes: validation, coordinate arithmetic and printing of Mesh; make_mesh.
// The process's device count and descriptors live in jit/runtime/devices.cc (core/device.h).
#include "sharding/mesh.h"

#include <climits>
#include <set>
#include <sstream>

#include "core/device.h"
#include "core/errors.h"

namespace minijax {

namespace {

std::string names_str(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + "]";
}

std::string ints_str(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

Mesh::Mesh(std::vector<int> devices, Shape shape_, std::vector<std::string> names,
           std::source_location loc)
    : device_ids(std::move(devices)), shape(std::move(shape_)), axis_names(std::move(names)) {
  auto fail = [&](const std::string& why) {
    throw ShardingError("Mesh: " + why + " (mesh shape " + shape_str(shape) + ", axis names " +
                            names_str(axis_names) + ", " + std::to_string(device_ids.size()) +
                            " devices)",
                        loc);
  };
  if (shape.size() != axis_names.size())
    fail(std::to_string(shape.size()) + " axis sizes but " + std::to_string(axis_names.size()) +
         " axis names");
  int64_t prod = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1)
      fail("axis '" + axis_names[i] + "' has size " + std::to_string(shape[i]) +
           "; axis sizes must be >= 1");
    prod *= shape[i];
  }
  if (prod != int64_t(device_ids.size()))
    fail("the mesh shape holds " + std::to_string(prod) + " devices but " +
         std::to_string(device_ids.size()) + " were given");
  std::set<std::string> seen;
  for (auto& n : axis_names) {
    if (n.empty()) fail("an axis name is empty");
    if (!seen.insert(n).second) fail("axis name '" + n + "' appears twice");
  }
  std::set<int> ids;
  for (int d : device_ids) {
    if (d < 0) fail("device id " + std::to_string(d) + " is negative");
    if (!ids.insert(d).second) fail("device " + std::to_string(d) + " appears twice");
  }
}

bool Mesh::has_axis(const std::string& name) const {
  for (auto& n : axis_names)
    if (n == name) return true;
  return false;
}

int64_t Mesh::axis_index(const std::string& name, std::source_location loc) const {
  for (size_t i = 0; i < axis_names.size(); ++i)
    if (axis_names[i] == name) return int64_t(i);
  throw ShardingError("Mesh::axis_index: unknown mesh axis '" + name + "'; " + str() + " has axes " +
                          names_str(axis_names),
                      loc);
}

int64_t Mesh::axis_size(const std::string& name, std::source_location loc) const {
  for (size_t i = 0; i < axis_names.size(); ++i)
    if (axis_names[i] == name) return shape[i];
  throw ShardingError("Mesh::axis_size: unknown mesh axis '" + name + "'; " + str() + " has axes " +
                          names_str(axis_names),
                      loc);
}

std::vector<int64_t> Mesh::coords_of(size_t position) const {
  if (position >= device_ids.size())
    throw IndexError("Mesh::coords_of: position " + std::to_string(position) + " out of range for " +
                     str() + " with " + std::to_string(device_ids.size()) + " devices");
  std::vector<int64_t> c(shape.size());
  int64_t p = int64_t(position);
  for (size_t i = shape.size(); i-- > 0;) {
    c[i] = p % shape[i];
    p /= shape[i];
  }
  return c;
}

size_t Mesh::position_of(const std::vector<int64_t>& coords) const {
  if (coords.size() != shape.size())
    throw IndexError("Mesh::position_of: " + std::to_string(coords.size()) + " coordinates for " +
                     str());
  int64_t p = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (coords[i] < 0 || coords[i] >= shape[i])
      throw IndexError("Mesh::position_of: coordinate " + std::to_string(coords[i]) +
                       " out of range for axis '" + axis_names[i] + "' of " + str());
    p = p * shape[i] + coords[i];
  }
  return size_t(p);
}

int Mesh::device_at(const std::vector<int64_t>& coords) const {
  return device_ids[position_of(coords)];
}

int64_t Mesh::position_of_device(int id) const {
  for (size_t i = 0; i < device_ids.size(); ++i)
    if (device_ids[i] == id) return int64_t(i);
  return -1;
}

std::string Mesh::str() const {
  std::string s = "Mesh(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", '" : "'") + axis_names[i] + "': " + std::to_string(shape[i]);
  bool identity = true;
  for (size_t i = 0; i < device_ids.size(); ++i) identity = identity && device_ids[i] == int(i);
  if (!identity) s += ", devices=" + ints_str(device_ids);
  return s + ")";
}

Mesh make_mesh(const Shape& axis_shapes, const std::vector<std::string>& axis_names,
               std::source_location loc) {
  const int available = num_devices(loc);
  auto fail = [&](const std::string& why) {
    throw ShardingError("make_mesh(" + shape_str(axis_shapes) + ", " + names_str(axis_names) +
                            "): " + why + " (the process has " + std::to_string(available) +
                            " devices)",
                        loc);
  };
  if (axis_shapes.size() != axis_names.size())
    fail(std::to_string(axis_shapes.size()) + " axis sizes but " +
         std::to_string(axis_names.size()) + " axis names");
  int64_t needed = 1;
  bool overflow = false;  // a product past int64: certainly more devices than there are
  for (size_t i = 0; i < axis_shapes.size(); ++i) {
    if (axis_shapes[i] < 1)
      fail("axis '" + axis_names[i] + "' has size " + std::to_string(axis_shapes[i]) +
           "; axis sizes must be >= 1");
    if (needed > INT64_MAX / axis_shapes[i]) overflow = true;
    else needed *= axis_shapes[i];
  }
  if (overflow || needed > available)
    fail("the mesh needs " + (overflow ? std::string("more than 2^63") : std::to_string(needed)) +
         " devices; set mj::set_num_devices(n), mj::config().num_cpu_devices or "
         "MINIJAX_NUM_DEVICES before the devices are first used");
  std::vector<int> ids(static_cast<size_t>(needed));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int(i);
  return Mesh(std::move(ids), axis_shapes, axis_names, loc);
}

}  // namespace minijax
