// The suite's one flag vocabulary replaced per-tool spellings (issue 19). An old spelling is
// refused, on the command line and in a --config file, with a hint naming the new one:
// "error: --min-grad is now --fpa-backward" (exit 2). docs/flags.md lists the vocabulary.
#pragma once

#include <boost/program_options/options_description.hpp>

#include <string>
#include <utility>
#include <vector>

namespace fpa {

// (old name, new name) without dashes, e.g. ("min-grad", "fpa-backward").
const std::vector<std::pair<std::string, std::string>>& renamed_flags();

// The new name of a retired flag, or "" when `name` was never renamed.
std::string renamed_to(const std::string& name);

// Exit 2 with "<where>--<name> is now --<new>" when `name` is a retired spelling of a flag that
// `all` has under its new name.
void refuse_renamed(const std::string& name, const boost::program_options::options_description& all,
                    const std::string& where);

}  // namespace fpa
