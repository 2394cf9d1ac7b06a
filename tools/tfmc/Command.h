//===- Command.h - a tfmc subcommand and the driver's helpers ---*- C++ -*-===//
//
// Each subcommand lives in its own file with its options next to its code
// (Compile.cpp, Translate.cpp, ...): a class holding its llvm::cl
// SubCommand and options, built before the command line is parsed, and a
// run() called when its subcommand was chosen. main() only dispatches.
//
//===----------------------------------------------------------------------===//
#ifndef TOOLS_TFMC_COMMAND_H
#define TOOLS_TFMC_COMMAND_H

#include "runtime/session/Session.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace tfmc::driver {

class Command {
public:
  virtual ~Command() = default;
  /// The llvm::cl subcommand this command registered.
  virtual llvm::cl::SubCommand &subcommand() = 0;
  /// Runs the command; returns the process exit status.
  virtual int run() = 0;
};

std::unique_ptr<Command> createCompileCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createTranslateCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createForwardCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createEncodeCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createScoreCommand(llvm::cl::OptionCategory &cat);

/// Prints "error: MESSAGE" (one line) and returns the failure status 1.
int fail(const llvm::Twine &message);
int fail(llvm::Error error);

/// `--kernels library|loops`, registered on one subcommand.
class KernelsOption {
public:
  KernelsOption(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &cat);
  /// Whether linear layers go through the library kernels (oneDNN); an
  /// error for an unknown value or a build without oneDNN.
  llvm::Expected<bool> useLibrary() const;

private:
  llvm::cl::opt<std::string> value;
};

/// Reads a file of space-separated token ids, one sequence per line, each
/// id checked against `vocab` ("FILE: line N: ..." errors).
llvm::Expected<runtime::TokenRows> readIdFile(llvm::StringRef path,
                                              int64_t vocab);

/// `path`, or stdout when empty.
llvm::Expected<std::unique_ptr<llvm::raw_fd_ostream>>
openOutput(llvm::StringRef path);

} // namespace tfmc::driver

#endif // TOOLS_TFMC_COMMAND_H
