//===- ScoreFiles.cpp - BLEU and chrF of a hypothesis file ----------------===//
#include "runtime/scoring/ScoreFiles.h"

#include "runtime/scoring/ScoringText.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace tfmc;
using namespace tfmc::scoring;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str().c_str());
}

/// The lines of a UTF-8 text file ('\n' or "\r\n"; a final line needs no
/// newline).
static llvm::Expected<std::vector<std::string>> readLines(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path + ": cannot open file: " + buffer.getError().message());
  llvm::StringRef text = (*buffer)->getBuffer();
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
      return fail(path + " has " + llvm::Twine(lines->size()) +
                  " lines but " + hypPath + " has " +
                  llvm::Twine(hyps->size()));
    for (size_t i = 0; i < lines->size(); ++i)
      if (splitWords((*lines)[i]).empty())
        return fail(path + ":" + llvm::Twine(i + 1) +
                    ": empty reference line");
    refs.push_back(std::move(*lines));
  }
  ScoreReport report;
  report.lines = static_cast<int64_t>(hyps->size());
  report.bleu = corpusBleu(*hyps, refs);
  report.chrf = corpusChrF(*hyps, refs);
  return report;
}
