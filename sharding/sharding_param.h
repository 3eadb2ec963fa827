// minijax sharding params: a Sharding as an opaque param, the handle a sharded Array keeps and the
// `sharding` parameter of sharding_constraint. Owns ShardingParam, sharding_param, sharding_of_param.
#pragma once
#include <utility>

#include "core/params.h"
#include "sharding/sharding.h"

namespace minijax {

/// A Sharding as an opaque ParamObject: the handle a sharded ConcreteArray keeps and the
/// `sharding` parameter of the sharding_constraint primitive. str() is Sharding::str() (the
/// Shardy form without the mesh, e.g. `[{"x"}, {}]`); equals() compares the Shardings.
class ShardingParam final : public ParamObject {
 public:
  explicit ShardingParam(Sharding s) : s_(std::move(s)) {}
  const Sharding& sharding() const { return s_; }
  std::string str() const override { return s_.str(); }
  bool equals(const ParamObject& o) const override;

 private:
  Sharding s_;
};

/// A shared ShardingParam holding `s`.
ParamObjectPtr sharding_param(Sharding s);
/// The Sharding inside `p`. ValueError (naming `what`) when p is null or not a ShardingParam.
const Sharding& sharding_of_param(const ParamObjectPtr& p, const char* what = "a sharding");

}  // namespace minijax
