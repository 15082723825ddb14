#include "lm/checkpoint_option.h"

#include <filesystem>

namespace fpa::lm {

std::vector<std::string> run_files_of(const std::string& checkpoint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir(checkpoint);
  if (!fs::is_directory(dir, ec)) {
    if (dir.filename() != "checkpoint.pt") return {};  // a weights file carries its record itself
    dir = dir.parent_path();
  }
  if (dir.empty()) dir = ".";
  // lm-train's and passkey-train's names (checkpoint.cpp's training_record reads the sidecars).
  std::vector<std::string> files;
  for (const char* name : {"checkpoint.pt", "log.csv", "log.csv.json", "train_log.csv",
                           "train_log.csv.json"})
    files.push_back((dir / name).string());
  return files;
}

void declare_checkpoint_input(Cli& cli, bool required) {
  if (required)
    cli.require([](const po::variables_map& vm) { return vm.count("checkpoint") > 0; },
                "--checkpoint is required");
  cli.input("checkpoint", PathKind::Any);
  cli.input("--checkpoint's run files", PathKind::File, [](const Cli& c) {
    return c.has("checkpoint") ? run_files_of(c.get<std::string>("checkpoint"))
                               : std::vector<std::string>{};
  });
}

}  // namespace fpa::lm
