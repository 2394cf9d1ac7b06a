//===- ProfileFormat.cpp - a Profile as Markdown, JSON, CSV or SVG --------===//
#include "tfmc/Profile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace tfmc;

namespace {

/// "decode_step tfm.linear decoder_layers.0.feed_forward.linear1".
std::string label(const ProfileRow &row) {
  std::string out = row.function.empty() ? "" : row.function + " ";
  out += row.kind;
  if (!row.name.empty())
    out += " " + row.name;
  return out;
}

double coverage(const Profile &p) {
  double ops = 0;
  for (const ProfileRow &row : p.rows)
    if (row.category == "op")
      ops += row.seconds;
  return p.wallSeconds > 0 ? ops / p.wallSeconds : 0;
}

void header(llvm::raw_ostream &os, const Profile &p, llvm::StringRef prefix) {
  os << prefix << p.host << "; " << p.threads << " thread"
     << (p.threads == 1 ? "" : "s") << "\n";
  if (!p.configuration.empty())
    os << prefix << "run: " << p.configuration << "\n";
  os << prefix
     << llvm::formatv("limits measured at start: sgemm {0:f1} GFLOP/s, memory "
                      "read {1:f1} GB/s",
                      p.peakGflops, p.bandwidthGBs);
  if (p.bfloat16Gflops > 0)
    os << llvm::formatv(", bfloat16 products {0:f1} GFLOP/s", p.bfloat16Gflops);
  if (p.int8Gops > 0)
    os << llvm::formatv(", int8 products {0:f1} GOP/s", p.int8Gops);
  os << "\n";
  os << prefix << llvm::formatv("translate calls: {0:f3} s; ", p.wallSeconds);
  for (auto [i, f] : llvm::enumerate(p.functions))
    os << (i ? ", " : "")
       << llvm::formatv("{0} {1} calls {2:f3} s", f.name, f.calls, f.seconds);
  os << "\n"
     << prefix
     << llvm::formatv("compiled ops: {0:f1}% of the translate time",
                      100 * coverage(p))
     << "\n";
}

std::string markdown(const Profile &p) {
  std::string out;
  llvm::raw_string_ostream os(out);
  header(os, p, "");
  os << "\n| share | seconds | calls | us/call | function | op | name | "
        "detail | MFLOP/call | MB/call | GFLOP/s | GB/s | roofline |\n"
     << "|---:|---:|---:|---:|---|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const ProfileRow &r : p.rows) {
    bool op = r.category == "op";
    auto number = [&](double v) {
      return op ? llvm::formatv("{0:f2}", v).str() : std::string();
    };
    double calls = r.calls > 0 ? static_cast<double>(r.calls) : 1.0;
    os << llvm::formatv("| {0:f1}% | {1:f4} | {2} | {3} | {4} | {5} | {6} | "
                        "{7} | {8} | {9} | {10} | {11} | {12} |\n",
                        100 * r.share, r.seconds,
                        r.calls ? std::to_string(r.calls) : "",
                        r.calls ? llvm::formatv("{0:f1}", 1e6 * r.seconds / calls).str()
                                : "",
                        r.function, r.kind, r.name, r.detail,
                        number(r.flop / calls / 1e6), number(r.bytes / calls / 1e6),
                        number(r.gflops), number(r.gbs),
                        op ? llvm::formatv("{0:f0}%", 100 * r.roofline).str()
                           : "");
  }
  return out;
}

std::string json(const Profile &p) {
  llvm::json::Array functions, rows;
  for (const ProfileFunction &f : p.functions)
    functions.push_back(llvm::json::Object{
        {"name", f.name}, {"calls", f.calls}, {"seconds", f.seconds}});
  for (const ProfileRow &r : p.rows) {
    double calls = r.calls > 0 ? static_cast<double>(r.calls) : 1.0;
    rows.push_back(llvm::json::Object{{"category", r.category},
                                      {"function", r.function},
                                      {"kind", r.kind},
                                      {"name", r.name},
                                      {"detail", r.detail},
                                      {"calls", r.calls},
                                      {"seconds", r.seconds},
                                      {"share", r.share},
                                      {"flop", r.flop},
                                      {"bytes", r.bytes},
                                      {"flop_per_call", r.flop / calls},
                                      {"bytes_per_call", r.bytes / calls},
                                      {"gflops", r.gflops},
                                      {"gbs", r.gbs},
                                      {"roofline", r.roofline},
                                      {"arithmetic", r.arithmetic}});
  }
  llvm::json::Object root{{"host", p.host},
                          {"configuration", p.configuration},
                          {"threads", p.threads},
                          {"peak_gflops", p.peakGflops},
                          {"bandwidth_gbs", p.bandwidthGBs},
                          {"bfloat16_peak_gflops", p.bfloat16Gflops},
                          {"int8_peak_gops", p.int8Gops},
                          {"wall_seconds", p.wallSeconds},
                          {"functions", std::move(functions)},
                          {"rows", std::move(rows)}};
  return llvm::formatv("{0:2}", llvm::json::Value(std::move(root))).str() +
         "\n";
}

/// A CSV field, quoted when it holds a comma, quote or line break.
std::string csvField(llvm::StringRef s) {
  if (s.find_first_of(",\"\n") == llvm::StringRef::npos)
    return s.str();
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv(const Profile &p) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "category,function,kind,name,detail,calls,seconds,share,flop,bytes,"
        "flop_per_call,bytes_per_call,gflops,gbs,roofline,arithmetic\n";
  for (const ProfileRow &r : p.rows) {
    double calls = r.calls > 0 ? static_cast<double>(r.calls) : 1.0;
    os << csvField(r.category) << "," << csvField(r.function) << ","
       << csvField(r.kind) << "," << csvField(r.name) << ","
       << csvField(r.detail) << "," << r.calls << ","
       << llvm::formatv("{0:e6},{1:e6},{2:e6},{3:e6},{4:e6},{5:e6},{6:e6},"
                        "{7:e6},{8:e6}",
                        r.seconds, r.share, r.flop, r.bytes, r.flop / calls,
                        r.bytes / calls, r.gflops, r.gbs, r.roofline)
       << "," << csvField(r.arithmetic) << "\n";
  }
  return out;
}

std::string xmlEscape(llvm::StringRef s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// Horizontal bars, one per row (the 40 longest, the others summed in one
/// bar), coloured by category, with each op's roofline fraction.
std::string svg(const Profile &p) {
  constexpr size_t kBars = 40;
  constexpr int kLabel = 560, kBarWidth = 420, kRow = 18, kTop = 70;
  struct Bar {
    std::string text, category;
    double seconds, share, roofline;
  };
  std::vector<Bar> bars;
  double rest = 0, restShare = 0;
  for (const ProfileRow &r : p.rows) {
    if (bars.size() < kBars)
      bars.push_back({label(r), r.category, r.seconds, r.share, r.roofline});
    else
      rest += r.seconds, restShare += r.share;
  }
  if (rest > 0)
    bars.push_back({"(the other rows)", "other", rest, restShare, 0});
  double longest = 0;
  for (const Bar &b : bars)
    longest = std::max(longest, b.seconds);
  int width = kLabel + kBarWidth + 200;
  int height = kTop + kRow * static_cast<int>(bars.size()) + 20;
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"monospace\" "
                      "font-size=\"11\">\n",
                      width, height)
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"8\" y=\"18\" font-size=\"13\">"
     << xmlEscape(llvm::formatv("tfmc profile: {0:f3} s in translate calls; "
                                "compiled ops {1:f1}%",
                                p.wallSeconds, 100 * coverage(p))
                      .str())
     << "</text>\n<text x=\"8\" y=\"36\">"
     << xmlEscape(llvm::formatv("{0}; {1}{2}sgemm {3:f1} GFLOP/s, read {4:f1} "
                                "GB/s",
                                p.host, p.configuration,
                                p.configuration.empty() ? "" : "; ",
                                p.peakGflops, p.bandwidthGBs)
                      .str())
     << "</text>\n<text x=\"8\" y=\"54\">blue: compiled ops (roofline "
        "fraction at the right), grey: compiled functions outside ops, "
        "green: runtime</text>\n";
  for (auto [i, b] : llvm::enumerate(bars)) {
    int y = kTop + static_cast<int>(i) * kRow;
    int w = longest > 0
                ? std::max(1, static_cast<int>(kBarWidth * b.seconds / longest))
                : 1;
    const char *colour = b.category == "op"        ? "#4a7bd0"
                         : b.category == "runtime" ? "#5aa469"
                                                   : "#9a9a9a";
    os << "<g class=\"bar\"><title>" << xmlEscape(b.text) << "</title>"
       << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">",
                        kLabel - 6, y + 12)
       << xmlEscape(b.text.size() > 80 ? b.text.substr(0, 77) + "..." : b.text)
       << "</text>"
       << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"{4}\"/>",
                        kLabel, y + 2, w, kRow - 4, colour)
       << llvm::formatv("<text x=\"{0}\" y=\"{1}\">", kLabel + w + 6, y + 12)
       << xmlEscape(llvm::formatv("{0:f1}% {1:f3} s", 100 * b.share, b.seconds)
                        .str())
       << (b.category == "op"
               ? llvm::formatv(", roofline {0:f0}%", 100 * b.roofline).str()
               : std::string())
       << "</text></g>\n";
  }
  os << "</svg>\n";
  return out;
}

} // namespace

Result<std::string> tfmc::formatProfile(const Profile &profile,
                                        const std::string &format) {
  if (format == "md")
    return markdown(profile);
  if (format == "json")
    return json(profile);
  if (format == "csv")
    return csv(profile);
  if (format == "svg")
    return svg(profile);
  return Result<std::string>::failure("unknown profile format '" + format +
                                      "' (expected md, json, csv or svg)");
}
