// The experiment runtime: options, atomic CSV with provenance, progress formatting.
#include "experiments/atomic_file.h"
#include "experiments/cli.h"
#include "experiments/csv_writer.h"
#include "experiments/progress.h"
#include "experiments/provenance.h"
#include "experiments/renamed_flags.h"
#include "experiments/run_dir.h"
#include "experiments/torch_runtime.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <sstream>

namespace fs = std::filesystem;
using namespace fpa;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
fs::path scratch(const std::string& name) {
  auto d = fs::temp_directory_path() / ("fpa_test_runtime_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST(Cli, ParsesCommonAndSpecificOptionsAndConfigFile) {
  auto dir = scratch("cli");
  std::ofstream(dir / "run.cfg") << "steps = 7\nseed = 99\n";
  Cli cli("prog", "test", "out.csv");
  cli.add()("steps", po::value<int>()->default_value(1), "steps");
  const std::string cfg = (dir / "run.cfg").string();
  std::vector<std::string> args = {"prog", "--seed", "3", "--config", cfg};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  cli.parse(int(argv.size()), argv.data());
  EXPECT_EQ(cli.seed(), 3u);            // the command line wins over the file
  EXPECT_EQ(cli.get<int>("steps"), 7);  // the file stands in for a flag
  EXPECT_EQ(cli.out(), "out.csv");
  EXPECT_EQ(cli.config().at("steps"), "7");
}

TEST(Cli, RejectsBadInputWithExitCode2) {
  auto run = [](std::vector<std::string> args) {
    Cli cli("prog", "test", "out.csv");
    cli.add()("steps", po::value<int>()->default_value(1), "steps");
    cli.range("steps", 1, 10);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    cli.parse(int(argv.size()), argv.data());
  };
  EXPECT_EXIT(run({"prog", "--bogus"}), ::testing::ExitedWithCode(2), "error: .*bogus");
  EXPECT_EXIT(run({"prog", "--steps", "11"}), ::testing::ExitedWithCode(2),
              "error: --steps must be in \\[1, 10\\]");
  EXPECT_EXIT(run({"prog", "--steps", "x"}), ::testing::ExitedWithCode(2), "error: ");
  EXPECT_EXIT(run({"prog", "--config", "/nonexistent/file"}), ::testing::ExitedWithCode(2),
              "error: --config: '/nonexistent/file' is not a readable file");
  EXPECT_EXIT(run({"prog", "--config", "/tmp"}), ::testing::ExitedWithCode(2),
              "error: --config: '/tmp' is not a readable file");
  // What boost::program_options would let through (issue 20).
  EXPECT_EXIT(run({"prog", "stray"}), ::testing::ExitedWithCode(2),
              "error: unexpected argument 'stray'");
  EXPECT_EXIT(run({"prog", "--out", "--steps", "2"}), ::testing::ExitedWithCode(2),
              "error: --out is missing its value \\(the next word, '--steps', is an option\\)");
  EXPECT_EXIT(run({"prog", "--seed", "-1"}), ::testing::ExitedWithCode(2),
              "error: --seed must be a non-negative integer, not '-1'");
  EXPECT_EXIT(run({"prog", "--out", "/etc/passwd/x.csv"}), ::testing::ExitedWithCode(2),
              "error: --out: cannot create '/etc/passwd/x.csv': '/etc/passwd' is not a directory");
  EXPECT_EXIT(run({"prog", "--out", "/tmp"}), ::testing::ExitedWithCode(2),
              "error: --out: '/tmp' is a directory");
  EXPECT_EXIT(split_unique_list("a,b,a", "names"), ::testing::ExitedWithCode(2),
              "error: --names: 'a' is given twice");
  EXPECT_EXIT(require_memory(1e30, "prog", "a huge table"), ::testing::ExitedWithCode(2),
              "error: prog needs about .* of memory \\(a huge table\\); this machine has");
}

// Retired spellings (renamed_flags.h) get the new name where the tool has it; flags are never
// abbreviated (a prefix would reach another flag).
TEST(Cli, RefusesRetiredSpellingsWithTheNewNameAndAbbreviations) {
  auto dir = scratch("cli-renamed");
  std::ofstream(dir / "old.cfg") << "# before the rename\nmin-grad = exact\n";
  const std::string cfg = (dir / "old.cfg").string();
  auto run = [](std::vector<std::string> args) {
    Cli cli("prog", "test", "out.csv");
    cli.add()("fpa-backward", po::value<std::string>()->default_value("exact"), "mode")
        ("embed-std", po::value<double>()->default_value(0.0), "std");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    cli.parse(int(argv.size()), argv.data());
    std::exit(0);
  };
  EXPECT_EXIT(run({"prog", "--fpa-backward", "exact"}), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run({"prog", "--min-grad", "exact"}), ::testing::ExitedWithCode(2),
              "^error: --min-grad is now --fpa-backward\n$");
  EXPECT_EXIT(run({"prog", "--min-grad=exact"}), ::testing::ExitedWithCode(2),
              "^error: --min-grad is now --fpa-backward\n$");
  EXPECT_EXIT(run({"prog", "--config", cfg}), ::testing::ExitedWithCode(2),
              "^error: --config '.*old.cfg': --min-grad is now --fpa-backward\n$");
  // A retired name whose new one this tool lacks is just unknown.
  EXPECT_EXIT(run({"prog", "--context", "4"}), ::testing::ExitedWithCode(2),
              "^error: unrecognised option '--context'\n$");
  EXPECT_EXIT(run({"prog", "--embed", "1"}), ::testing::ExitedWithCode(2),
              "^error: unrecognised option '--embed'\n$");
  EXPECT_EQ(renamed_to("n-list"), "lengths");
  EXPECT_EQ(renamed_to("lengths"), "");
}

TEST(Cli, ChecksDeclaredInputsAndOutputsBeforeAnyWork) {
  auto run = [](std::vector<std::string> args) {
    Cli cli("prog", "test", "");
    cli.add()("data", po::value<std::string>()->default_value(""), "input")
        ("dir", po::value<std::string>()->default_value(""), "output directory");
    cli.input("data", PathKind::Dir);
    cli.output("dir", PathKind::Dir);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    cli.parse(int(argv.size()), argv.data());
    std::exit(0);
  };
  EXPECT_EXIT(run({"prog"}), ::testing::ExitedWithCode(0), "");  // empty: not given
  EXPECT_EXIT(run({"prog", "--data", "/nonexistent"}), ::testing::ExitedWithCode(2),
              "error: --data: '/nonexistent' does not exist");
  EXPECT_EXIT(run({"prog", "--data", "/etc/passwd"}), ::testing::ExitedWithCode(2),
              "error: --data: '/etc/passwd' is not a directory");
  EXPECT_EXIT(run({"prog", "--dir", "/etc/passwd"}), ::testing::ExitedWithCode(2),
              "error: --dir: '/etc/passwd' exists and is not a directory");
  EXPECT_EXIT(run({"prog", "--dir", "/tmp/fpa-not-yet/a/b"}), ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(why_not_writable("/etc/passwd/x", PathKind::File),
            "cannot create '/etc/passwd/x': '/etc/passwd' is not a directory");
  EXPECT_EQ(why_not_writable("x.csv", PathKind::File), "");
}

// Computed paths (a list's files) are inputs like any other: no output may be one of them, and
// an output may not go inside a folder another run owns.
TEST(Cli, RefusesOutputsOverComputedInputsAndInsideRunFolders) {
  namespace fs = std::filesystem;
  const auto root = fs::temp_directory_path() / ("fpa-cli-paths-" + std::to_string(::getpid()));
  fs::create_directories(root / "run");
  std::ofstream(root / "run" / kRunLockName) << "1\n";
  std::ofstream(root / "a.task") << "x\n";
  auto run = [&](std::string program, std::vector<std::string> args) {
    Cli cli(program, "test", "");
    cli.add()("tasks", po::value<std::string>()->default_value("dips"), "names or files");
    cli.input("--tasks", PathKind::File, [](const Cli& c) {
      std::vector<std::string> files;
      for (const auto& t : split_list(c.get<std::string>("tasks"), "tasks"))
        if (t.find('/') != std::string::npos) files.push_back(t);
      return files;
    });
    args.insert(args.begin(), program);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    cli.parse(int(argv.size()), argv.data());
    std::exit(0);
  };
  const auto task = (root / "a.task").string();
  EXPECT_EXIT(run("prog", {"--tasks", "dips," + task, "--out", task}), ::testing::ExitedWithCode(2),
              "error: --out '.*a.task' is the same file as --tasks '.*a.task', which this tool reads");
  EXPECT_EXIT(run("prog", {"--tasks", "dips," + task, "--out", (root / "b.csv").string()}),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(run("prog", {"--out", (root / "run" / "x.csv").string()}), ::testing::ExitedWithCode(2),
              "error: --out '.*x.csv' is or lies inside the run directory '.*run' \\(marked by its "
              "\\.lock\\), which another run owns");

  // A sweep's runs/ belongs to the synthetic-run processes it starts.
  fs::create_directories(root / "sweep" / "runs");
  mark_sweep_folder((root / "sweep").string());
  const auto in_runs = (root / "sweep" / "runs" / "r.csv").string();
  EXPECT_NE(run_folder_owning(in_runs, {}, "theory-eviction"), "");
  EXPECT_EQ(run_folder_owning(in_runs, {}, kSweepRunWriter), "");
  EXPECT_EQ(run_folder_owning((root / "sweep" / "summary.csv").string(), {}, "theory-eviction"), "");
  // A tool's own run directory is its to write; one inside another run's is not.
  EXPECT_EQ(run_folder_owning((root / "run" / "log.csv").string(), {(root / "run").string()}, "lm-train"), "");
  EXPECT_NE(run_folder_owning((root / "run" / "sub").string(), {(root / "run" / "sub").string()}, "lm-train"), "");
  fs::remove_all(root);
}

TEST(Cli, SplitsLists) {
  EXPECT_EQ(split_list("a,b", "x"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_int_list("8,16", "x"), (std::vector<int>{8, 16}));
  EXPECT_EXIT(split_int_list("8,z", "head-dims"), ::testing::ExitedWithCode(2),
              "error: --head-dims: 'z' is not an integer");
}

// A run makes its Provenance when it commits its CSV, at the end: the wall time must still be
// the whole program's, not the time since that call.
TEST(Provenance, WallTimeCountsFromTheProgramStart) {
  Cli cli("prog", "test", "out.csv");
  std::vector<std::string> args = {"prog"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  cli.parse(int(argv.size()), argv.data());
  const auto before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto p = Provenance::from(cli);
  EXPECT_LE(p.start, before);
  EXPECT_GE(p.wall_seconds(), 0.05);
  EXPECT_EQ(p.started_utc.size(), 20u);  // 2026-11-29T16:00:00Z
}

// The sidecar's machine: sessions of this project ran on Intel and AMD CPUs, whose kernels round
// differently, so a result is traced to the kind of CPU that computed it.
TEST(Provenance, MachineComesFromTheFirstProcessorOfCpuinfo) {
  const std::string intel =
      "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Processor\n"
      "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile\n\n"
      "processor\t: 1\nvendor_id\t: Other\nflags\t\t: fpu\n";
  const auto m = parse_cpuinfo(intel);
  EXPECT_EQ(m.cpu_model, "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(m.cpu_id, "GenuineIntel family 6 model 143");
  EXPECT_EQ(m.simd, "sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile");
  const auto amd = parse_cpuinfo(
      "vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 1\nmodel name : AMD EPYC\n"
      "flags : fma sse4_1 sse4_2 avx sse4a avx2\n");
  EXPECT_EQ(amd.cpu_id, "AuthenticAMD family 25 model 1");
  EXPECT_EQ(amd.simd, "sse4_2 avx avx2 fma");
  EXPECT_TRUE(parse_cpuinfo("").empty());

  Provenance p;
  p.machine = amd;
  EXPECT_NE(p.to_json().find("\"machine\": {\"cpu_model\": \"AMD EPYC\", \"cpu_id\": "
                             "\"AuthenticAMD family 25 model 1\", \"simd\": \"sse4_2 avx avx2 fma\"}"),
            std::string::npos)
      << p.to_json();
  p.machine = {};
  EXPECT_EQ(p.to_json().find("machine"), std::string::npos);  // none read: no field
}

// A run resumed from its checkpoint: the sidecar keeps each earlier invocation as it was recorded
// (code version, start, wall time, machine), oldest first, and says which differ from this one.
TEST(Provenance, AResumedRunsSidecarListsItsEarlierInvocationsOldestFirst) {
  const MachineDescription xeon{"Xeon \"v4\"", "GenuineIntel family 6 model 79", "avx2"},
      epyc{"AMD EPYC", "AuthenticAMD family 25 model 1", "avx2 fma"};
  Provenance first;
  first.code_version = "aaa";
  first.started_utc = "2026-12-01T00:00:00Z";
  first.machine = xeon;
  const auto one = invocations_in_sidecar(first.to_json());
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rfind("{\"code_version\": \"aaa\", \"started_utc\": \"2026-12-01T00:00:00Z\", "
                         "\"wall_s\": ", 0), 0u) << one[0];
  EXPECT_NE(one[0].find("\"machine\": {\"cpu_model\": \"Xeon \\\"v4\\\"\""), std::string::npos) << one[0];
  Provenance second;
  second.code_version = "bbb";
  second.machine = epyc;
  second.resumed_from = one;
  const auto two = invocations_in_sidecar(second.to_json());
  ASSERT_EQ(two.size(), 2u) << second.to_json();
  EXPECT_EQ(two[0], one[0]);
  EXPECT_NE(two[1].find("\"code_version\": \"bbb\""), std::string::npos);
  EXPECT_EQ(resumed_elsewhere({two[1]}, "bbb", epyc), "");
  EXPECT_EQ(resumed_elsewhere(two, "bbb", epyc),
            "1 of the 2 earlier invocation(s) of this run ran other code or on another kind of CPU "
            "than this one (code bbb on AuthenticAMD family 25 model 1 [avx2 fma]): #1 (started "
            "2026-12-01T00:00:00Z): code aaa on GenuineIntel family 6 model 79 [avx2]. Its numbers "
            "repeat bit for bit only by the same sequence; the sidecar lists them under resumed_from");
  EXPECT_NE(resumed_elsewhere({two[1]}, "ccc", epyc), "");  // other code, same CPU
  second.machine = {};
  EXPECT_NE(resumed_elsewhere(invocations_in_sidecar(second.to_json()), "bbb", epyc)
                .find("a CPU not recorded"), std::string::npos);
  EXPECT_TRUE(invocations_in_sidecar("not a sidecar").empty());
}

TEST(CsvWriter, WritesAtomicallyWithProvenanceSidecar) {
  auto dir = scratch("csv");
  const auto path = (dir / "sub" / "r.csv").string();
  CsvWriter csv(path, {"name", "x", "note"});
  csv.row("a", 1.5, "has,comma");
  csv.row("b", 2, "say \"hi\"");
  EXPECT_FALSE(fs::exists(path));  // nothing on disk before commit
  Provenance p;
  p.program = "prog";
  p.seed = 42;
  p.code_version = "abc";
  p.config = {{"steps", "7"}};
  csv.commit(p);
  EXPECT_EQ(slurp(path), "name,x,note\na,1.5,\"has,comma\"\nb,2,\"say \"\"hi\"\"\"\n");
  const auto meta = slurp(path + ".json");
  EXPECT_NE(meta.find("\"seed\": 42"), std::string::npos);
  EXPECT_NE(meta.find("\"steps\": \"7\""), std::string::npos);
  EXPECT_NE(meta.find("\"wall_s\""), std::string::npos);
  for (auto& e : fs::directory_iterator(dir / "sub"))  // no temporary files left behind
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  EXPECT_THROW(csv.row("only-one"), std::logic_error);
}

// A write killed between its temporary and the rename leaves <file>.tmp.<pid>; the next write of
// the same file removes it (and only the temporaries of that file, of processes that are gone).
TEST(AtomicFile, NextWriteRemovesStaleTemporaries) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("fpa-stale-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const pid_t gone = ::fork();
  if (gone == 0) std::_Exit(0);
  ::waitpid(gone, nullptr, 0);
  const auto stale = dir / ("a.csv.tmp." + std::to_string(gone));
  const auto other = dir / ("b.csv.tmp." + std::to_string(gone));
  const auto live = dir / ("a.csv.tmp." + std::to_string(::getppid()));
  for (const auto& p : {stale, other, live}) std::ofstream(p) << "half";
  write_file_atomic((dir / "a.csv").string(), "x\n");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(live));  // a process that still runs may be writing it
  EXPECT_EQ(read_file((dir / "a.csv").string()), "x\n");
  fs::remove_all(dir);
}

TEST(AtomicFile, ReplacesExistingFile) {
  auto dir = scratch("atomic");
  const auto path = (dir / "f.txt").string();
  write_file_atomic(path, "old");
  write_file_atomic(path, "new");
  EXPECT_EQ(slurp(path), "new");
}

// A resumed run's rate counts only this invocation's steps (it once divided all 2200 steps of a
// run resumed at 2000 by the seconds since the resume: "8 step/s" for a 0.8 step/s run).
TEST(Progress, ResumedRunRateCountsOnlyNewWork) {
  Progress p("resumed", 100, "step", 0.0);
  p.resume_at(90);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::testing::internal::CaptureStderr();
  p.update(91);
  const std::string line = ::testing::internal::GetCapturedStderr();
  const auto open = line.find('[');
  ASSERT_NE(open, std::string::npos) << line;
  const double rate = std::stod(line.substr(open + 1));
  EXPECT_GT(rate, 0.0) << line;
  EXPECT_LT(rate, 11.0) << line;  // 1 step in >= 0.1 s; 910 without resume_at
}

TEST(Progress, FormatsDurations) {
  EXPECT_EQ(Progress::format_duration(12.2), "12s");
  EXPECT_EQ(Progress::format_duration(185), "3m05s");
  EXPECT_EQ(Progress::format_duration(3720), "1h02m");
  EXPECT_EQ(Progress::format_duration(-1), "?");
}

// --threads must reach the BLAS too: OpenBLAS's own pool otherwise spins on the other core.
TEST(TorchRuntime, SetThreadsReachesOpenBlas) {
  using GetThreads = int (*)();
  auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!get) GTEST_SKIP() << "LibTorch's BLAS is not OpenBLAS here";
  fpa::set_threads(2);
  EXPECT_EQ(get(), 2);
  fpa::set_threads(1);
  EXPECT_EQ(get(), 1);
}
