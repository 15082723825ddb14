// lm's name for fpa::choose_impl (kernels/impl_choice.h), which synthetic/ shares.
#pragma once

#include "kernels/impl_choice.h"

namespace fpa::lm {

using fpa::choose_impl;

}  // namespace fpa::lm
