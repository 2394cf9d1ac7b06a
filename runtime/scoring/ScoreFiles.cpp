//===- ScoreFiles.cpp - BLEU and chrF of a hypothesis file ----------------===//
#include "runtime/scoring/ScoreFiles.h"

#include "runtime/scoring/ScoringText.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"

using namespace tfmc;
using namespace tfmc::scoring;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str().c_str());
}

/// Most bytes read from a file that is not a regular one (a pipe, as in
/// `--hyp <(tfmc translate ...)`, or a device): /dev/zero ends here.
static constexpr size_t kMaxStreamBytes = size_t(256) << 20;

/// The bytes of `path`: a regular file whole, anything else up to
/// kMaxStreamBytes.
static llvm::Expected<std::string> readBytes(llvm::StringRef path) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return fail(path + ": cannot open file: " + ec.message());
  if (status.type() == llvm::sys::fs::file_type::directory_file)
    return fail(path + ": cannot open file: is a directory");
  auto file = llvm::sys::fs::openNativeFileForRead(path);
  if (!file)
    return fail(path +
                ": cannot open file: " + llvm::toString(file.takeError()));
  auto close = llvm::make_scope_exit([&] { llvm::sys::fs::closeFile(*file); });
  bool regular = status.type() == llvm::sys::fs::file_type::regular_file;
  std::string bytes;
  char chunk[1 << 16];
  while (true) {
    auto got = llvm::sys::fs::readNativeFile(*file, chunk);
    if (!got)
      return fail(path + ": cannot read: " + llvm::toString(got.takeError()));
    if (*got == 0)
      return bytes;
    if (!regular && bytes.size() + *got > kMaxStreamBytes)
      return fail(path + ": more than " + llvm::Twine(kMaxStreamBytes >> 20) +
                  " MiB from a file that is not a regular one (a pipe or a "
                  "device)");
    bytes.append(chunk, *got);
  }
}

/// The lines of a UTF-8 text file ('\n' or "\r\n"; a final line needs no
/// newline).
static llvm::Expected<std::vector<std::string>> readLines(llvm::StringRef path) {
  auto bytes = readBytes(path);
  if (!bytes)
    return bytes.takeError();
  llvm::StringRef text = *bytes;
  std::vector<std::string> lines;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    line = line.rtrim('\r');
    auto decoded = decodeUtf8(line);
    if (!decoded)
      return fail(path + ":" + llvm::Twine(lines.size() + 1) + ": " +
                  llvm::toString(decoded.takeError()));
    lines.push_back(line.str());
    text = rest;
  }
  return lines;
}

llvm::Expected<ScoreReport>
scoring::scoreFiles(llvm::StringRef hypPath,
                    llvm::ArrayRef<std::string> refPaths) {
  if (refPaths.empty())
    return fail("no reference file");
  auto hyps = readLines(hypPath);
  if (!hyps)
    return hyps.takeError();
  std::vector<std::vector<std::string>> refs;
  for (const std::string &path : refPaths) {
    auto lines = readLines(path);
    if (!lines)
      return lines.takeError();
    if (lines->size() != hyps->size())
      return fail(path + " has " + llvm::Twine(lines->size()) + " lines but " +
                  hypPath + " has " + llvm::Twine(hyps->size()));
    refs.push_back(std::move(*lines));
  }
  ScoreReport report;
  report.lines = static_cast<int64_t>(hyps->size());
  report.bleu = corpusBleu(*hyps, refs);
  report.chrf = corpusChrF(*hyps, refs);
  return report;
}
