// The `sluice` command line. Everything but the dispatch lives in the
// sluice_tools library (tools/commands.h), where tests can reach it.
#include <iostream>
#include <string>
#include <vector>

#include "core/process_mutexes.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  sluice::UseReleaseMutexes();  // the process is sluice's own
  std::vector<std::string> args(argv + 1, argv + argc);
  return sluice::SluiceMain(args, std::cout, std::cerr);
}
