// What an eviction policy sees of one attention head's cache: the kernels' plain view
// (kernels/cache_view.h, no tensors), under the name lm/ and the passkey policies use.
#pragma once

#include "kernels/cache_view.h"

namespace fpa::lm {

using HeadCacheView = fpa::CacheHeadView;

}  // namespace fpa::lm
