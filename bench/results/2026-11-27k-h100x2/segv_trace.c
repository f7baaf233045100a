// LD_PRELOAD shim: on SIGSEGV/SIGABRT print the native backtrace and the mapped objects, so a
// host crash on the GPU machine (no gdb there) can be resolved with addr2line afterwards.
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
static void on_signal(int sig, siginfo_t* info, void* ctx) {
  (void)ctx;
  char buf[128];
  int n = snprintf(buf, sizeof buf, "\n=== signal %d at address %p\n", sig, info->si_addr);
  write(2, buf, n);
  void* frames[64];
  int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, 2);
  int fd = open("/proc/self/maps", O_RDONLY);
  char m[4096];
  ssize_t r;
  write(2, "=== maps\n", 9);
  while ((r = read(fd, m, sizeof m)) > 0) write(2, m, r);
  close(fd);
  signal(sig, SIG_DFL);
  raise(sig);
}
__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGABRT, &sa, 0);
}
