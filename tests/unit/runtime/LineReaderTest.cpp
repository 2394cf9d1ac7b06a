//===- LineReaderTest.cpp - line cutting and the byte limit
//-----------------===//
#include "runtime/session/LineReader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace tfmc::runtime;

namespace {

/// Every line of `text` read with a `limit`-byte LineReader, and whether
/// each was cut.
std::vector<std::pair<std::string, bool>> readAll(const std::string &text,
                                                  size_t limit) {
  FILE *file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  EXPECT_EQ(std::fwrite(text.data(), 1, text.size(), file), text.size());
  std::fflush(file);
  std::rewind(file);
  LineReader reader(fileno(file), limit);
  std::vector<std::pair<std::string, bool>> lines;
  std::string line;
  for (;;) {
    auto status = reader.next(line, /*wait=*/true);
    EXPECT_TRUE(static_cast<bool>(status));
    if (!status || *status != LineReader::Status::Line)
      break;
    lines.emplace_back(line, reader.truncated());
  }
  std::fclose(file);
  return lines;
}

using Lines = std::vector<std::pair<std::string, bool>>;

TEST(LineReader, LinesWithinTheLimitAreWhole) {
  EXPECT_EQ(
      readAll("ab\n\ncdefgh\nlast", 6),
      (Lines{{"ab", false}, {"", false}, {"cdefgh", false}, {"last", false}}));
}

TEST(LineReader, LongerLinesKeepTheirFirstBytes) {
  // The rest of a long line is dropped, and the next line is intact.
  EXPECT_EQ(readAll("0123456789\nnext\n0123456789", 4),
            (Lines{{"0123", true}, {"next", false}, {"0123", true}}));
}

TEST(LineReader, ACutNeverSplitsACharacter) {
  // "你" is three bytes: a 4-byte limit keeps one of the two, a 7-byte one
  // two of three.
  EXPECT_EQ(readAll("你你\n你你你\n", 4), (Lines{{"你", true}, {"你", true}}));
  EXPECT_EQ(readAll("你你你\n", 7), (Lines{{"你你", true}}));
}

TEST(LineReader, AHugeLineIsDroppedAsItArrives) {
  // More than the reader's 64 KiB chunks, with no newline until the end:
  // what is kept stays at the limit.
  std::string huge(1 << 20, 'x');
  EXPECT_EQ(readAll(huge + "\nok\n", 16),
            (Lines{{std::string(16, 'x'), true}, {"ok", false}}));
  EXPECT_EQ(readAll(huge, 16), (Lines{{std::string(16, 'x'), true}}));
}

} // namespace
