// `lm-train --nproc N`: starts N copies of this executable, one per rank, on this machine, with
// RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and MASTER_PORT set, and waits for all of them. If a
// rank fails, the others are stopped. Returns the exit code to use (0 when every rank succeeded).
#pragma once

#include <string>
#include <vector>

namespace fpa::lm {

// `args` are the command-line arguments for the ranks (without --nproc). Port 0: pick a free one.
int launch_ranks(int nproc, const std::vector<std::string>& args, int master_port);

// Removes `--name VALUE` and `--name=VALUE` from argv[1..].
std::vector<std::string> args_without(int argc, char** argv, const std::string& name);

}  // namespace fpa::lm
