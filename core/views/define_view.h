// minijax typed views: the definitions every view of one primitive repeats — is(Primitive),
// is(Eqn) and its accessor — as macros for the views' sources (core/views/*.cc) only.
#pragma once
#include "core/primitive.h"
#include "core/views/view.h"

/// Defines `View::is(const Eqn&)` (the equation's primitive is the view's) and the accessor
/// `View accessor(const Eqn&)`, which throws ValueError (views::wrong_primitive) for an equation
/// of another primitive. The view defines `View::is(const Primitive&)` itself, or through
/// MJ_DEFINE_VIEW.
#define MJ_DEFINE_VIEW_ACCESSOR(View, accessor)                           \
  bool View::is(const Eqn& e) { return e.primitive && is(*e.primitive); } \
  View accessor(const Eqn& e) {                                           \
    if (!View::is(e)) views::wrong_primitive(#View, e);                   \
    return View::from(e.params);                                          \
  }

/// MJ_DEFINE_VIEW_ACCESSOR and `View::is(const Primitive&)`: true for the primitive registered as
/// `name` alone (a pointer comparison against a function-local static).
#define MJ_DEFINE_VIEW(View, accessor, name)                    \
  bool View::is(const Primitive& p) {                           \
    static const Primitive* q = &get_or_create_primitive(name); \
    return &p == q;                                             \
  }                                                             \
  MJ_DEFINE_VIEW_ACCESSOR(View, accessor)
