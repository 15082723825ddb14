// Figure data of one held-out sequence (the first of the held-out set at n): per head the
// attention matrix and the learned field (FPA: phi; FoX: cumulative log gate F), and the
// ground truth (types, true field, target sets), in one long-format CSV:
//   kind,head,i,j,value,label
//   attention,h,i,j,a_ij,   target,,i,j,1,   field,h,,j,phi_j,   true_field,,,j,phi_j,
//   type,,,j,type index,type name
#pragma once

#include "experiments/provenance.h"
#include "train.h"

#include <string>

namespace fpa::synthetic {

void write_dump(const std::string& path, const RunConfig& c, TargetSetModel& model,
                const Provenance& provenance);

}  // namespace fpa::synthetic
