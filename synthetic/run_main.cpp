// synthetic-run: one training run of the one-layer model on a target-set task, to one CSV with
// the training curve (phase=curve) and the final held-out metrics at n and 2n (phase=final).
#include "dump.h"
#include "experiments/csv_writer.h"
#include "experiments/torch_runtime.h"
#include "run_options.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>

namespace syn = fpa::synthetic;

namespace {

std::string num(double x) { return std::isfinite(x) ? fmt::format("{:.6g}", x) : ""; }

}  // namespace

int main(int argc, char** argv) {
  fpa::Cli cli("synthetic-run",
               "train the one-layer model (softmax, FoX or FPA) on a synthetic target-set task",
               "results/synthetic/run.csv");
  syn::add_run_options(cli);
  cli.add()("dump", fpa::po::value<std::string>(),
            "also write attention, learned field and target sets of one held-out sequence to this CSV");
  cli.output("dump", fpa::PathKind::File);
  cli.parse(argc, argv);
  auto provenance = fpa::Provenance::from(cli);
  const auto config = syn::run_config_from(cli);
  syn::require_run_memory(config);
  try {
    fpa::seed_everything(config.seed);
    fpa::set_threads(cli.threads());
    auto model_config = config.model;
    syn::TargetSetModel model(model_config);
    const auto& a = config.model.attention;
    const auto run_label = fmt::format("synthetic-run {} {}{} d{} seed {}", config.task.name,
                                   to_string(a.variant),
                                   a.variant == fpa::Variant::Fpa ? "/" + to_string(a.fpa_backward) : "",
                                   config.model.head_dim, config.seed);
    const auto result = syn::train_run(config, model, run_label);
    const auto& fn = result.final_n;
    const auto& f2 = result.final_2n;
    std::cerr << fmt::format("{}: mass {:.3f} nmse {:.3f} (2n: {:.3f} {:.3f}) converged {}\n", run_label,
                             fn.mass, fn.nmse, f2.mass, f2.nmse, syn::converged(fn) ? "yes" : "no");

    fpa::CsvWriter csv(cli.out(), {"phase", "step", "lr", "loss", "mass", "mass_best", "nmse",
                                   "mass2n", "mass2n_best", "nmse2n", "converged",
                                   "steps_to_converge", "wall_s", "task", "model", "fpa_backward",
                                   "heads", "head_dim", "n", "seed", "config"});
    const auto label = syn::fpa_grad_label(config);
    const auto key = syn::config_key(config);
    auto common = [&](std::vector<std::string> cells) {
      for (auto s : {config.task.name, to_string(a.variant), label,
                     std::to_string(config.model.heads), std::to_string(config.model.head_dim),
                     std::to_string(config.n), std::to_string(config.seed), key})
        cells.push_back(s);
      csv.add_row(cells);
    };
    for (const auto& p : result.curve)
      common({"curve", std::to_string(p.step), num(p.lr), num(p.loss), num(p.held_out.mass),
              num(p.held_out.mass_best), num(p.held_out.nmse), "", "", "",
              syn::converged(p.held_out) ? "1" : "0", "", ""});
    common({"final", std::to_string(config.steps), "", num(result.curve.back().loss), num(fn.mass),
            num(fn.mass_best), num(fn.nmse), num(f2.mass), num(f2.mass_best), num(f2.nmse),
            syn::converged(fn) ? "1" : "0", std::to_string(result.steps_to_converge),
            fmt::format("{:.3f}", result.wall_s)});
    if (cli.has("dump")) syn::write_dump(cli.get<std::string>("dump"), config, model, provenance);
    csv.commit(provenance);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
