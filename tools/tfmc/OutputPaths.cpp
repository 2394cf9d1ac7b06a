//===- OutputPaths.cpp - outputs that would overwrite what a run reads ----===//
//
// Opening an output truncates it. An output that names a file the command
// reads destroys it: its input before it is read, or a model file the
// loaded model still maps (its weights then vanish under the mapping and
// the process dies of SIGBUS). Two outputs naming one file overwrite each
// other. Commands note what they read and check every output before
// opening any.
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/OutputPaths.h"
#include "tools/tfmc/Command.h"

#include "compiler/Pipelines/Pipelines.h"
#include "frontends/model/ModelDescription.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <sys/stat.h>

namespace tfmc::driver {

namespace {

/// The name of a file that does not exist yet, how it is told apart from
/// another: its directory's real path (links resolved) and its own name,
/// or, where the directory does not exist either, the path made absolute
/// without its "." and ".." components.
std::string absolute(llvm::StringRef path) {
  llvm::SmallString<256> full(path);
  (void)llvm::sys::fs::make_absolute(full);
  llvm::SmallString<256> directory;
  if (!llvm::sys::fs::real_path(llvm::sys::path::parent_path(full),
                                directory)) {
    llvm::sys::path::append(directory, llvm::sys::path::filename(full));
    return std::string(directory);
  }
  llvm::sys::path::remove_dots(full, /*remove_dot_dot=*/true);
  return std::string(full);
}

} // namespace

void FileRoles::noteRead(llvm::StringRef path, llvm::StringRef role) {
  struct stat st;
  if (path.empty() || ::stat(path.str().c_str(), &st) != 0)
    return;
  entries.push_back({st.st_dev, st.st_ino, "", role.str()});
}

void FileRoles::noteReadFd(int fd, llvm::StringRef role) {
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    entries.push_back({st.st_dev, st.st_ino, "", role.str()});
}

void FileRoles::noteModel(llvm::StringRef modelJson) {
  auto desc = frontend::parseModelDescription(modelJson);
  if (!desc) {
    // Loading the model reports it.
    llvm::consumeError(desc.takeError());
    return;
  }
  noteRead(modelJson, "the model description");
  noteRead(desc->weightsPath, "the model's weights");
  for (const auto &[side, name] : {std::pair{&desc->source, "source"},
                                   std::pair{&desc->target, "target"}}) {
    noteRead(side->vocabPath,
             std::string("the model's ") + name + " vocabulary");
    noteRead(side->spmModelPath,
             std::string("the model's ") + name + " SentencePiece model");
  }
}

llvm::Error FileRoles::checkOutput(llvm::StringRef path,
                                   llvm::StringRef option) {
  if (path.empty() || path == "-")
    return llvm::Error::success();
  auto refuse = [&](const std::string &role) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "%s: is %s; writing %s there would destroy it", path.str().c_str(),
        role.c_str(), option.str().c_str());
  };
  struct stat st;
  bool exists = ::stat(path.str().c_str(), &st) == 0;
  // A device or a pipe (/dev/null; /dev/stdout on a terminal) is not
  // truncated.
  if (exists && !S_ISREG(st.st_mode))
    return llvm::Error::success();
  // Outputs are checked against each other too: by file where it exists
  // (a link is the file), else by name.
  std::string role = "the file of " + option.str();
  if (exists) {
    if (const Entry *e = find(st))
      return refuse(e->role);
    entries.push_back({st.st_dev, st.st_ino, "", role});
    return llvm::Error::success();
  }
  std::string name = absolute(path);
  for (const Entry &e : entries)
    if (!e.name.empty() && e.name == name)
      return refuse(e.role);
  entries.push_back({0, 0, name, role});
  return llvm::Error::success();
}

llvm::Error FileRoles::checkDumpDirectory(llvm::StringRef dir) {
  if (dir.empty())
    return llvm::Error::success();
  for (const std::string &name : mlir::tfm::dumpFileNames()) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    if (llvm::Error e = checkOutput(path, "--dump-ir " + dir.str()))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error FileRoles::checkOutputFd(int fd, llvm::StringRef option) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return llvm::Error::success();
  if (const Entry *e = find(st))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s is %s; writing there would destroy it",
                                   option.str().c_str(), e->role.c_str());
  entries.push_back({st.st_dev, st.st_ino, "", option.str()});
  return llvm::Error::success();
}

const FileRoles::Entry *FileRoles::find(const struct stat &st) const {
  for (const Entry &e : entries)
    if (e.name.empty() && e.dev == st.st_dev && e.ino == st.st_ino)
      return &e;
  return nullptr;
}

} // namespace tfmc::driver
