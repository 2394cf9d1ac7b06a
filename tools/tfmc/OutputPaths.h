//===- OutputPaths.h - outputs that would overwrite inputs ------*- C++ -*-===//
//
// Opening an output truncates it: a command notes the files it reads and
// checks every output against them, and against its other outputs, before
// opening any (OutputPaths.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TOOLS_TFMC_OUTPUTPATHS_H
#define TOOLS_TFMC_OUTPUTPATHS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>

namespace tfmc::driver {

/// What a command reads (its input, the model's files) and writes: an
/// output naming a file it reads, or another output, is refused before any
/// output is opened (opening truncates: OutputPaths.cpp).
class FileRoles {
public:
  /// Notes `path` as read, as `role` ("the input file"); a path that does
  /// not exist is skipped.
  void noteRead(llvm::StringRef path, llvm::StringRef role);
  /// ... the regular file open as `fd` (standard input redirected from a
  /// file).
  void noteReadFd(int fd, llvm::StringRef role);
  /// The model's description, weights, vocabularies and SentencePiece
  /// models, as its model.json names them (nothing for a file that does not
  /// parse: loading it reports that).
  void noteModel(llvm::StringRef modelJson);
  /// An error when `path`, given as `option` ("-o"), names a file noted
  /// (read, or an output checked before); otherwise notes it as an output.
  llvm::Error checkOutput(llvm::StringRef path, llvm::StringRef option);
  /// The same for an output already open as `fd` (standard output
  /// redirected to a file: `-i F >> F`).
  llvm::Error checkOutputFd(int fd, llvm::StringRef option);
  /// checkOutput() for every file `--dump-ir DIR` may write (empty `dir`:
  /// no dump).
  llvm::Error checkDumpDirectory(llvm::StringRef dir);

private:
  struct Entry {
    dev_t dev = 0;
    ino_t ino = 0;
    /// An output that does not exist yet, by its absolute name.
    std::string name;
    std::string role;
  };
  std::vector<Entry> entries;
  /// The noted file that is the existing file `st`, or null.
  const Entry *find(const struct stat &st) const;
};

} // namespace tfmc::driver

#endif // TOOLS_TFMC_OUTPUTPATHS_H
