// tritium-run: starts the processes of a data-parallel job on this host, torchrun's way. Each
// gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR and MASTER_PORT
// (dist::init_process_group reads them). SIGINT and SIGTERM are passed on to every process; when
// one fails, the others are stopped (SIGTERM, then SIGKILL after a grace period) and tritium-run
// exits with status 1 after a line naming the rank and how it ended. Run with --help.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tools/cli.h"

namespace {

const char* kUsage =
    "usage: tritium-run [options] PROGRAM [ARGS...]\n"
    "Starts --nproc-per-node copies of PROGRAM on this host as ranks of one data-parallel job,\n"
    "with torchrun's environment variables: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
    "GROUP_RANK (the node rank), MASTER_ADDR and MASTER_PORT (dist::init_process_group reads\n"
    "them; rank 0 serves the rendezvous store on MASTER_PORT).\n"
    "  --nproc-per-node N   processes on this host, 1 to 1024 (required)\n"
    "  --nnodes K           hosts in the job, 1 to 1024 (default 1); each runs tritium-run\n"
    "  --node-rank R        this host's index, 0 to K - 1 (default 0): its ranks are\n"
    "                       R * N to R * N + N - 1\n"
    "  --master-addr A      the host of rank 0 (default 127.0.0.1)\n"
    "  --master-port P      the rendezvous port on it, 1 to 65535 (default 29500)\n"
    "  --grace-period S     seconds between SIGTERM and SIGKILL when stopping the ranks, 0 to\n"
    "                       3600 (default 5)\n"
    "  --help               this text\n"
    "Options end at PROGRAM (or after --). SIGINT and SIGTERM are passed on to every rank. When a\n"
    "rank exits with a non-zero status or is killed by a signal, the others are stopped and\n"
    "tritium-run exits with status 1 after a line naming the rank; status 0 when all succeed.\n"
    "Mistakes in the options end with one line on stderr and exit status 2.\n";

struct Config {
  int64_t nproc_per_node = 0, nnodes = 1, node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  int64_t grace_seconds = 5;
  std::vector<std::string> program;  // PROGRAM ARGS...
};

Config parse(int argc, char** argv) {
  using tritium::cli::UsageError;
  Config c;
  bool node_rank_given = false;
  int i = 1;
  auto value = [&](const std::string& option) -> std::string {
    if (i + 1 >= argc) throw UsageError(option + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string o = argv[i];
    if (o == "--help" || o == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (o == "--") {
      ++i;
      break;
    }
    if (o.rfind("-", 0) != 0) break;  // the program
    if (o == "--nproc-per-node") c.nproc_per_node = tritium::cli::parse_int(o, value(o), 1, 1024);
    else if (o == "--nnodes") c.nnodes = tritium::cli::parse_int(o, value(o), 1, 1024);
    else if (o == "--node-rank") c.node_rank = tritium::cli::parse_int(o, value(o), 0, 1023), node_rank_given = true;
    else if (o == "--master-addr") {
      c.master_addr = value(o);
      if (c.master_addr.empty()) throw UsageError("--master-addr: the address is empty");
    } else if (o == "--master-port") c.master_port = tritium::cli::parse_int(o, value(o), 1, 65535);
    else if (o == "--grace-period") c.grace_seconds = tritium::cli::parse_int(o, value(o), 0, 3600);
    else throw UsageError("unknown option '" + o + "'");
  }
  for (; i < argc; ++i) c.program.push_back(argv[i]);
  if (c.nproc_per_node == 0) throw UsageError("--nproc-per-node is required");
  if (c.program.empty()) throw UsageError("no program to run (tritium-run [options] PROGRAM [ARGS...])");
  if (c.node_rank >= c.nnodes)
    throw UsageError(fmt::format("--node-rank: {} is out of range for --nnodes {} (0 to {})", c.node_rank, c.nnodes,
                                 c.nnodes - 1));
  if (c.nnodes > 1 && !node_rank_given) throw UsageError("--node-rank is required with --nnodes above 1");
  return c;
}

volatile std::sig_atomic_t g_signal = 0;  // the last SIGINT/SIGTERM received, to pass on
void on_signal(int sig) { g_signal = sig; }

struct Rank {
  int rank, local_rank;
  pid_t pid;
  bool running = true;
};

std::string describe(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "ended";
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

pid_t start(const Config& c, int local_rank) {
  int64_t world = c.nproc_per_node * c.nnodes;
  int64_t rank = c.node_rank * c.nproc_per_node + local_rank;
  pid_t launcher = getpid();
  pid_t pid = fork();
  if (pid < 0) throw tritium::Error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid > 0) return pid;
  // The child: its own process group, so that stopping it reaches what it starts too.
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);  // a launcher killed outright leaves no rank behind
  if (getppid() != launcher) _exit(1);  // ... even when it died before the line above
  signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
  auto set = [](const char* name, const std::string& v) { setenv(name, v.c_str(), 1); };
  set("RANK", std::to_string(rank));
  set("LOCAL_RANK", std::to_string(local_rank));
  set("WORLD_SIZE", std::to_string(world));
  set("LOCAL_WORLD_SIZE", std::to_string(c.nproc_per_node));
  set("GROUP_RANK", std::to_string(c.node_rank));
  set("MASTER_ADDR", c.master_addr);
  set("MASTER_PORT", std::to_string(c.master_port));
  std::vector<char*> args;
  for (const auto& a : c.program) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "tritium-run: cannot run '%s' (rank %lld): %s\n", args[0], static_cast<long long>(rank),
               std::strerror(errno));
  _exit(127);
}

// Sends sig to every rank still running.
void signal_all(std::vector<Rank>& ranks, int sig) {
  for (auto& r : ranks)
    if (r.running) kill(-r.pid, sig), kill(r.pid, sig);
}

// Reaps ranks that ended; returns the failure to report among them (or -1). When several ended
// within one poll, a rank killed by a signal is named before ranks that exited with an error: a
// killed peer makes the others' collectives fail at once ("Connection reset by peer"), and the
// launcher should name the cause, not the first survivor it happened to reap.
int reap(std::vector<Rank>& ranks, int* status_out) {
  int failed_index = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].running) continue;
    int status = 0;
    pid_t p = waitpid(ranks[i].pid, &status, WNOHANG);
    if (p != ranks[i].pid) continue;
    ranks[i].running = false;
    if (!failed(status)) continue;
    if (failed_index < 0 || (WIFSIGNALED(status) && !WIFSIGNALED(*status_out)))
      failed_index = static_cast<int>(i), *status_out = status;
  }
  return failed_index;
}

bool any_running(const std::vector<Rank>& ranks) {
  for (const auto& r : ranks)
    if (r.running) return true;
  return false;
}

// SIGTERM, then SIGKILL after the grace period; waits for every rank.
void stop_all(std::vector<Rank>& ranks, int64_t grace_seconds) {
  signal_all(ranks, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_seconds);
  int ignored;
  while (any_running(ranks)) {
    reap(ranks, &ignored);
    if (std::chrono::steady_clock::now() >= deadline) {
      signal_all(ranks, SIGKILL);
      deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int run(const Config& c) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  std::vector<Rank> ranks;
  for (int i = 0; i < c.nproc_per_node; ++i) {
    int rank = static_cast<int>(c.node_rank * c.nproc_per_node + i);
    ranks.push_back({rank, i, start(c, i)});
  }
  while (any_running(ranks)) {
    if (int sig = g_signal) {
      std::fprintf(stderr, "tritium-run: received signal %d (%s), passing it on to the ranks\n", sig, strsignal(sig));
      signal_all(ranks, sig);
      g_signal = 0;
      // Ranks that do not end on it are stopped after the grace period.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(c.grace_seconds);
      int ignored;
      while (any_running(ranks) && std::chrono::steady_clock::now() < deadline) {
        reap(ranks, &ignored);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      stop_all(ranks, 0);
      return 128 + sig;
    }
    int status = 0;
    int f = reap(ranks, &status);
    if (f >= 0) {
      std::fprintf(stderr, "tritium-run: rank %d (local rank %d, pid %d) %s; stopping the other ranks\n", ranks[f].rank,
                   ranks[f].local_rank, static_cast<int>(ranks[f].pid), describe(status).c_str());
      std::fflush(stderr);
      stop_all(ranks, c.grace_seconds);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tritium::cli::run_main("tritium-run", [&] { return run(parse(argc, argv)); });
}
