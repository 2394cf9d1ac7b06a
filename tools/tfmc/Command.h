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

#include "tools/tfmc/IntegerOption.h"

#include "frontends/model/Model.h"
#include "runtime/session/Session.h"

#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>

namespace tfmc {
class Translator;
} // namespace tfmc

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
std::unique_ptr<Command> createProfileCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createForwardCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createEncodeCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createQuantizeCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createScoreCommand(llvm::cl::OptionCategory &cat);
std::unique_ptr<Command> createServeCommand(llvm::cl::OptionCategory &cat);

/// Parses the command line for `commands` (each error one "error:" line)
/// and runs the chosen one; the process then exits with its status once the
/// commands are destroyed, without freeing what they left. Returns 1 (after
/// `missingCommand` as the error) when the command line names no command.
int dispatch(int argc, char **argv,
             llvm::MutableArrayRef<std::unique_ptr<Command>> commands,
             llvm::cl::OptionCategory &category,
             llvm::StringRef missingCommand);

class FileRoles;

/// `--profile-format`, `--profile-output` and `--profile-svg` of
/// `tfmc profile` (Profile.cpp).
class ProfileOutput {
public:
  ProfileOutput(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &cat);
  ~ProfileOutput();
  /// Checks the format, and the output paths against what the run reads
  /// and writes (FileRoles::checkOutput), before anything is compiled.
  llvm::Error checkPaths(FileRoles &files) const;
  /// Opens (truncates) the output files: once every option is known good,
  /// so that a refused command leaves them as they were.
  llvm::Error open();
  /// Writes the translator's profile where the options say.
  llvm::Error write(const tfmc::Translator &translator);

private:
  llvm::cl::opt<std::string> format, output, svg;
  std::unique_ptr<llvm::raw_fd_ostream> outputStream, svgStream;
};

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

/// `--threads N` (1 by default), registered on one subcommand with its own
/// description: translate's and profile's (threads for the batches and
/// the kernels), encode's and forward's (the library kernels' threads).
class ThreadsOption {
public:
  ThreadsOption(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &cat,
                llvm::StringRef description);
  /// The count; an error outside 1..tfmc::kMaxThreads.
  llvm::Expected<int> count() const;
  /// The value as given (check count() first).
  int given() const { return value; }

private:
  IntegerOption<int> value;
};

/// `--compute-type float32|float16|bfloat16|int8` and
/// `--quantize-output-projection`, registered on one subcommand.
class ComputeTypeOptions {
public:
  ComputeTypeOptions(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &cat);
  /// The type asked for; unset (the model file's "compute_type", else
  /// float32) when the option is not given; an error for an unknown name.
  llvm::Expected<std::optional<frontend::ComputeType>> type() const;
  /// The type in effect for `model`.
  llvm::Expected<frontend::ComputeType>
  resolve(const frontend::ModelDescription &model) const;
  bool outputProjection() const { return quantizeOutputProjection; }
  /// The option's text ("" when not given), for tfmc::LoadOptions.
  const std::string &name() const { return value; }
  /// Fills the session's compute-type fields; false after printing an error.
  bool apply(runtime::SessionOptions &options) const;

private:
  llvm::cl::opt<std::string> value;
  llvm::cl::opt<bool> quantizeOutputProjection;
};

/// `--kv-type auto|float32|float16`, registered on the subcommands that
/// compile decoder steps (compile, translate, profile, serve).
class KeyValueTypeOption {
public:
  KeyValueTypeOption(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &cat);
  /// The storage asked for; an error for an unknown name.
  llvm::Expected<runtime::KeyValueType> type() const;
  /// The option's text ("" when not given), for tfmc::LoadOptions.
  const std::string &name() const { return value; }
  /// Fills the session's field; false after printing an error.
  bool apply(runtime::SessionOptions &options) const;

private:
  llvm::cl::opt<std::string> value;
};

/// `--cache-dir DIR` and `--no-cache`, registered on one subcommand.
class CacheOptions {
public:
  CacheOptions(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &cat);
  /// The compiled-model cache directory to use, "" for none: --no-cache,
  /// else --cache-dir, else $TFMC_CACHE_DIR, $XDG_CACHE_HOME/tfmc or
  /// ~/.cache/tfmc.
  std::string directory() const;

private:
  llvm::cl::opt<std::string> dir;
  llvm::cl::opt<bool> disabled;
};

/// `--timing`, registered on one subcommand: a tree of phase times (model
/// loading, every MLIR pass, LLVM code generation, JIT link, ...) printed
/// to stderr when the command ends.
class TimingOption {
public:
  TimingOption(llvm::cl::SubCommand &sub, llvm::cl::OptionCategory &cat);
  ~TimingOption();
  /// The root timing scope, or null without --timing. Valid during run().
  mlir::TimingScope *root();
  /// Adds "NAME: SECONDS s" under the root (a time measured outside the
  /// timer tree, such as the time to the first translation).
  void note(llvm::StringRef name, double seconds);
  /// A timer named `name` under the root while the result lives (none
  /// without --timing).
  std::optional<mlir::TimingScope> scope(llvm::StringRef name);

private:
  llvm::cl::opt<bool> enabled;
  struct State;
  std::unique_ptr<State> state;
};

/// loadModel under a "load model" timer; with a `weightCacheDir`, the
/// float32 copies of float16/bfloat16 weights go through the weight cache
/// there (the compiled-model cache's directory, CacheOptions::directory()).
llvm::Expected<frontend::Model>
loadModelTimed(llvm::StringRef path, TimingOption &timing,
               llvm::StringRef weightCacheDir = "");

/// --cache-only (compile, serve): compiles into the compiled-model cache
/// `dir` what a session with `options` (translation, no teacher forcing)
/// compiles, and prints "cached: PATH" (or "cached (already): PATH"); an
/// error when `dir` is empty (no cache) or nothing could be stored. Each
/// executable keys its own entries (its build ID is part of the key), so
/// `serve --cache-only` fills what `tfmc serve` loads.
int fillCompileCache(frontend::Model model, runtime::SessionOptions options,
                     const std::string &dir);

/// Session::open under a "compile" timer (its phases nest there), with the
/// compiled-model cache of `cache`.
llvm::Expected<std::unique_ptr<runtime::Session>>
openSessionTimed(frontend::Model model, runtime::SessionOptions options,
                 const CacheOptions &cache, TimingOption &timing);

/// Seconds since main() started.
double secondsSinceStart();

/// Reads a file of space-separated token ids, one sequence per line, each
/// id checked against `vocab` ("FILE: line N: ..." errors).
llvm::Expected<runtime::TokenRows>
readIdFile(llvm::StringRef path, int64_t vocab,
           llvm::StringRef side = "source");

/// `path`, or stdout when empty.
llvm::Expected<std::unique_ptr<llvm::raw_fd_ostream>>
openOutput(llvm::StringRef path);

/// Flushes an output from openOutput(`path`) and reports a failed write (a
/// full disk) as one error, instead of the stream's own report at exit.
llvm::Error finishOutput(llvm::raw_fd_ostream &os, llvm::StringRef path);

/// One `warning:` line when `values` (what a command writes: "the
/// logits", "the encoder states") hold NaN or infinite numbers, as
/// translate warns of such a line: the model's arithmetic overflowed.
void warnIfNotNumbers(llvm::ArrayRef<float> values, llvm::StringRef what);

} // namespace tfmc::driver

#endif // TOOLS_TFMC_COMMAND_H
