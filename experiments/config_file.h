// Reading a --config file (`name = value` lines standing in for flags) for Cli::parse: refused
// with a one-line error (exit 2) when it is missing, not text, or names a retired flag.
#pragma once

#include <boost/program_options.hpp>

#include <string>

namespace fpa {

boost::program_options::parsed_options read_config_file(
    const std::string& path, const boost::program_options::options_description& all);

}  // namespace fpa
