#include "lm/launcher.h"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <stdexcept>

extern char** environ;

namespace fpa::lm {
namespace {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("launcher: cannot open a socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("launcher: cannot find a free port on 127.0.0.1");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

std::vector<std::string> args_without(int argc, char** argv, const std::string& name) {
  std::vector<std::string> out;
  const auto flag = "--" + name;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == flag) { ++i; continue; }
    if (a.rfind(flag + "=", 0) == 0) continue;
    out.push_back(a);
  }
  return out;
}

int launch_ranks(int nproc, const std::vector<std::string>& args, int master_port) {
  const int port = master_port > 0 ? master_port : free_port();
  const std::string exe = "/proc/self/exe";
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      bool ours = false;
      for (const char* k : {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT="})
        ours = ours || kv.rfind(k, 0) == 0;
      if (!ours) env_strings.push_back(kv);
    }
    env_strings.push_back(fmt::format("RANK={}", rank));
    env_strings.push_back(fmt::format("LOCAL_RANK={}", rank));  // one machine: rank r on GPU r
    env_strings.push_back(fmt::format("WORLD_SIZE={}", nproc));
    env_strings.push_back("MASTER_ADDR=127.0.0.1");
    env_strings.push_back(fmt::format("MASTER_PORT={}", port));
    std::vector<char*> envp, argvp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string argv0 = "lm-train";
    argvp.push_back(argv0.data());
    std::vector<std::string> a = args;
    for (auto& s : a) argvp.push_back(s.data());
    argvp.push_back(nullptr);
    pid_t pid;
    if (::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argvp.data(), envp.data()) != 0) {
      for (pid_t p : pids) ::kill(p, SIGTERM);
      throw std::runtime_error(fmt::format("launcher: cannot start rank {}", rank));
    }
    pids.push_back(pid);
  }
  int result = 0;
  size_t running = pids.size();
  while (running > 0) {
    int status = 0;
    const pid_t done = ::wait(&status);
    if (done < 0) break;
    bool ours = false;
    for (auto& p : pids)
      if (p == done) { p = -1; ours = true; }
    if (!ours) continue;
    --running;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) {
      result = code;
      for (pid_t p : pids)
        if (p > 0) ::kill(p, SIGTERM);  // stop the other ranks: they would wait forever
    }
  }
  return result;
}

}  // namespace fpa::lm
