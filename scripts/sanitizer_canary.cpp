// The canary of scripts/sanitize.sh: one known bug per case, built with the script's own flags and
// run under its own options (suppressions included) before the suite. Each case must end the
// process with a failure status and its sanitizer's report, or the script stops: a sanitizer run
// whose reports could not fail a test would be a check that cannot fail.
//
//   sanitizer_canary heap-overflow | use-after-free | signed-overflow | misaligned | leak | race
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

// Values the compiler cannot see through, so the bugs survive -O1.
volatile int opaque_one = 1;
volatile int opaque_max = 2147483647;

int heap_overflow() {
  int* p = new int[4 * opaque_one];  // a size UBSan's object-size check cannot see: ASan's case
  int v = p[4 * opaque_one];         // one past the end
  delete[] p;
  return v;
}

int use_after_free() {
  int* p = new int[4];
  p[0] = 7;
  delete[] p;
  return p[opaque_one - 1];
}

int signed_overflow() {
  int x = opaque_max;
  return x + opaque_one;
}

int misaligned() {
  alignas(8) char bytes[16] = {};
  int* p = reinterpret_cast<int*>(bytes + opaque_one);  // an int at an odd address
  return *p;
}

int leak() {
  static void* volatile sink;
  sink = new char[64];
  sink = nullptr;  // the only pointer to the block is gone
  return 0;
}

int race() {
  static int counter = 0;  // written by two threads without a lock
  std::thread a([] {
    for (int i = 0; i < 1000; ++i) counter = counter + opaque_one;
  });
  std::thread b([] {
    for (int i = 0; i < 1000; ++i) counter = counter + opaque_one;
  });
  a.join();
  b.join();
  return counter == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "";
  struct Case {
    const char* name;
    int (*run)();
  };
  const Case cases[] = {{"heap-overflow", heap_overflow}, {"use-after-free", use_after_free},
                        {"signed-overflow", signed_overflow}, {"misaligned", misaligned},
                        {"leak", leak}, {"race", race}};
  for (const Case& c : cases)
    if (std::strcmp(which, c.name) == 0) {
      int v = c.run();
      std::printf("canary %s survived (%d)\n", c.name, v);
      return 0;
    }
  std::fprintf(stderr, "sanitizer_canary: unknown case '%s'\n", which);
  return 2;
}
