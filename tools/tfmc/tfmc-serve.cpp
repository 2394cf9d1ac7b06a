//===- tfmc-serve.cpp - tfmc serve as an executable of its own ------------===//
//
// tfmc serve MODEL.json ... runs this (tfmc.cpp execs it with the same
// arguments); `tfmc-serve MODEL.json ...` works too. Only this executable
// links the HTTP library (Serve.cpp, runtime/server).
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"

#include "llvm/Support/InitLLVM.h"

#include <vector>

namespace cl = llvm::cl;
using namespace tfmc::driver;

int main(int argc, char **argv) {
  secondsSinceStart();
  llvm::InitLLVM init(argc, argv);
  // Messages and --help name the command as users type it: "tfmc serve".
  static char name[] = "tfmc", serveWord[] = "serve";
  std::vector<char *> args(argv, argv + argc);
  args[0] = name;
  if (argc < 2 || llvm::StringRef(argv[1]) != "serve")
    args.insert(args.begin() + 1, serveWord);
  cl::OptionCategory category("tfmc serve options");
  std::unique_ptr<Command> commands[] = {createServeCommand(category)};
  return dispatch(static_cast<int>(args.size()), args.data(), commands,
                  category, "expected: tfmc serve MODEL.json [options]");
}
