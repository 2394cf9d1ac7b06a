//===- TfmcModule.cpp - the tfmc Python module (pybind11) -----------------===//
//
// A thin binding of the public C++ API (include/tfmc/Translator.h). Python
// lists are converted while holding the GIL; the translation itself runs
// with the GIL released, so other Python threads keep running.
//
//===----------------------------------------------------------------------===//
#include "tfmc/Translator.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <stdexcept>

namespace py = pybind11;

namespace {

/// tfmc.OptionError: a bad option value, both a ValueError (what Python
/// code expects of a bad argument) and a RuntimeError (what these errors
/// were before 2026-12-07, and what the docs said).
PyObject *optionError = nullptr;

[[noreturn]] void raiseOptionError(const std::string &message) {
  PyErr_SetString(optionError, message.c_str());
  throw py::error_already_set();
}

/// The options of a translate call: `defaults` (the model file's decoding
/// defaults) where beam_size / length_penalty are None.
tfmc::TranslateOptions
makeOptions(const tfmc::TranslateOptions &defaults,
            std::optional<int64_t> beamSize, int64_t nBest,
            std::optional<double> lengthPenalty, int64_t maxLength,
            int64_t minLength, double maxLengthFactor, int64_t maxLengthOffset,
            int64_t noRepeatNgramSize, double repetitionPenalty,
            int64_t batchSize, bool replaceUnknown) {
  tfmc::TranslateOptions o = defaults;
  o.beamSize = beamSize.value_or(defaults.beamSize);
  o.nBest = nBest;
  o.lengthPenalty = lengthPenalty.value_or(defaults.lengthPenalty);
  o.maxLength = maxLength;
  o.minLength = minLength;
  o.maxLengthFactor = maxLengthFactor;
  o.maxLengthOffset = maxLengthOffset;
  o.noRepeatNgramSize = noRepeatNgramSize;
  o.repetitionPenalty = repetitionPenalty;
  o.batchSize = batchSize;
  o.replaceUnknown = replaceUnknown;
  return o;
}

/// A path argument (str, bytes or os.PathLike) as the bytes the system
/// takes: os.fsencode's, refusing an embedded NUL as open() does (the C++
/// side would cut the path there and load another file).
std::string pathArgument(const py::object &path, const char *name) {
  py::object bytes = py::module_::import("os").attr("fsencode")(path);
  std::string out = bytes.cast<std::string>();
  if (out.find('\0') != std::string::npos)
    throw py::value_error(std::string(name) + ": embedded null byte");
  return out;
}

/// Python's view of a translator: one C++ Translator, which several Python
/// threads may call at once (the GIL is released during each call).
class PyTranslator {
public:
  PyTranslator(const py::object &modelPath, const std::string &computeType,
               int threads, const std::string &kernels,
               const py::object &cacheDirPath, bool useCache, bool profile,
               int64_t warmUpRows, const std::string &kvType) {
    std::string model = pathArgument(modelPath, "model");
    std::string cacheDir = pathArgument(cacheDirPath, "cache_dir");
    tfmc::LoadOptions load;
    load.computeType = computeType;
    load.kvType = kvType;
    load.threads = threads;
    load.kernels = kernels;
    load.cacheDir = cacheDir;
    load.useCache = useCache;
    load.encoderStates = true;
    load.profile = profile;
    load.warmUpRows = warmUpRows;
    // Bad values are told apart from a model that cannot be loaded.
    if (std::string e = tfmc::loadOptionsError(load); !e.empty())
      raiseOptionError(e);
    tfmc::Result<std::unique_ptr<tfmc::Translator>> loaded =
        tfmc::Result<std::unique_ptr<tfmc::Translator>>::failure("");
    {
      py::gil_scoped_release release;
      loaded = tfmc::Translator::load(model, load);
    }
    if (!loaded)
      throw std::runtime_error(loaded.error());
    translator = std::move(*loaded);
  }

  /// Runs a translation with the GIL released; raises for a failed batch,
  /// and for a bad sentence unless errors == "ignore".
  template <typename Input, typename Call>
  std::vector<tfmc::Translation> run(const Input &input, Call call,
                                     const std::string &errors) {
    if (errors != "raise" && errors != "ignore")
      raiseOptionError("errors: expected 'raise' or 'ignore'");
    tfmc::Result<std::vector<tfmc::Translation>> out =
        tfmc::Result<std::vector<tfmc::Translation>>::failure("");
    {
      py::gil_scoped_release release;
      out = call(input);
    }
    if (!out)
      throw std::runtime_error(out.error());
    if (errors == "raise")
      for (size_t i = 0; i < out->size(); ++i)
        if (!(*out)[i].error.empty())
          throw py::value_error("sentence " + std::to_string(i) + ": " +
                                (*out)[i].error);
    // A translation's warning (no hypothesis, a NaN score) is a
    // RuntimeWarning through Python's warnings module: shown once per
    // message by default, an exception under `-W error`.
    for (size_t i = 0; i < out->size(); ++i)
      if (!(*out)[i].warning.empty()) {
        std::string text =
            "sentence " + std::to_string(i) + ": " + (*out)[i].warning;
        if (PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1) != 0)
          throw py::error_already_set();
      }
    return std::move(*out);
  }

  /// Translator.__new__ without __init__ constructs no PyTranslator, and a
  /// method called on it gets memory pybind11 allocates then through this
  /// operator (type_caster_generic's lazy allocation), unconstructed: zeroed
  /// here, its `translator` reads as null and get() says so (it read what
  /// an earlier translator had left there, and crashed).
  static void *operator new(size_t size) {
    void *memory = ::operator new(size);
    std::memset(memory, 0, size);
    return memory;
  }
  static void operator delete(void *memory) { ::operator delete(memory); }

  tfmc::Translator &get() {
    // Translator.__new__ without __init__ has none.
    if (!translator)
      throw std::runtime_error("this Translator was not initialised "
                               "(Translator(model, ...) loads one)");
    return *translator;
  }

private:
  std::unique_ptr<tfmc::Translator> translator;
};

/// Best strings, or with n_best > 1 / return_scores lists of
/// (text-or-ids, score) tuples.
template <typename Render>
py::list results(const std::vector<tfmc::Translation> &out, int64_t nBest,
                 bool returnScores, Render render) {
  py::list list;
  for (const tfmc::Translation &t : out) {
    if (nBest == 1 && !returnScores) {
      list.append(render(t.best()));
      continue;
    }
    py::list hyps;
    for (const tfmc::Hypothesis &h : t.hypotheses)
      hyps.append(py::make_tuple(render(h), h.score));
    list.append(hyps);
  }
  return list;
}

/// Sentences as bytes: str is encoded as UTF-8 (lone surrogates from
/// surrogateescape decoding come back as the original bytes, other lone
/// surrogates as their three-byte forms; the tokenizer then reports either
/// as invalid UTF-8), bytes are taken as they are. A str or bytes in place
/// of the list is refused (iterated, it would be one sentence a character).
std::vector<std::string> sentenceBytes(const py::sequence &sentences) {
  if (py::isinstance<py::str>(sentences) ||
      py::isinstance<py::bytes>(sentences))
    throw py::type_error("sentences must be a list of str or bytes, not one "
                         "str or bytes");
  std::vector<std::string> out;
  // A list holds a reference to each item while it is read: iterating the
  // sequence itself handed out items that a numpy array or a Sequence made
  // afresh per index and freed at once (wrong translations, a crash).
  py::list items(sentences);
  for (py::handle item : items) {
    if (py::isinstance<py::bytes>(item)) {
      out.push_back(item.cast<std::string>());
      continue;
    }
    if (!py::isinstance<py::str>(item))
      throw py::type_error("sentences must be str or bytes");
    py::object encoded = py::reinterpret_steal<py::object>(
        PyUnicode_AsEncodedString(item.ptr(), "utf-8", "surrogateescape"));
    if (!encoded && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
      PyErr_Clear();
      encoded = py::reinterpret_steal<py::object>(
          PyUnicode_AsEncodedString(item.ptr(), "utf-8", "surrogatepass"));
    }
    if (!encoded)
      throw py::error_already_set();
    out.push_back(encoded.cast<std::string>());
  }
  return out;
}

} // namespace

#define TFMC_TRANSLATE_ARGS                                                    \
  py::arg("beam_size") = py::none(), py::arg("n_best") = 1,                    \
  py::arg("length_penalty") = py::none(), py::arg("max_length") = 256,         \
  py::arg("min_length") = 0, py::arg("max_length_factor") = 3.0,               \
  py::arg("max_length_offset") = 10, py::arg("no_repeat_ngram_size") = 0,      \
  py::arg("repetition_penalty") = 1.0, py::arg("batch_size") = 32,             \
  py::arg("return_scores") = false, py::arg("errors") = "raise"

PYBIND11_MODULE(_tfmc, m) {
  m.doc() = "tfmc: compiled encoder-decoder translation Transformers";
  m.attr("__version__") = TFMC_VERSION;
  {
    PyObject *bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_RuntimeError);
    optionError = PyErr_NewExceptionWithDoc(
        "tfmc.OptionError",
        "A bad option value (a load option or a translate option): a "
        "ValueError and, as these errors were before, a RuntimeError.",
        bases, nullptr);
    Py_XDECREF(bases);
    if (!optionError)
      throw py::error_already_set();
    m.attr("OptionError") = py::reinterpret_borrow<py::object>(optionError);
  }
  py::class_<PyTranslator>(m, "Translator")
      .def(py::init<const py::object &, const std::string &, int,
                    const std::string &, const py::object &, bool, bool,
                    int64_t, const std::string &>(),
           py::arg("model"), py::arg("compute_type") = "",
           py::arg("threads") = 1, py::arg("kernels") = "",
           py::arg("cache_dir") = "", py::arg("use_cache") = true,
           py::arg("profile") = false, py::arg("warm_up_rows") = 1,
           py::arg("kv_type") = "auto",
           "Loads and compiles MODEL.json (through the compiled-model "
           "cache). compute_type: 'float32', 'float16', 'bfloat16' or 'int8' "
           "('' = the model file's compute_type, else float32). "
           "profile=True compiles "
           "the profiled variant: profile() then says where translate "
           "calls spent their time. warm_up_rows: the batch size translate "
           "calls will use (1-256), so that load packs the kernels' weights "
           "for it rather than the first call. kv_type: how the attention "
           "keys and values a decoder step reads are stored, 'float32', "
           "'float16' or 'auto' (float16 unless the compute type in effect is "
           "float32).")
      .def(
          "translate",
          [](PyTranslator &self, const py::sequence &sentenceList,
             std::optional<int64_t> beamSize, int64_t nBest,
             std::optional<double> lengthPenalty, int64_t maxLength,
             int64_t minLength, double maxLengthFactor, int64_t maxLengthOffset,
             int64_t noRepeatNgramSize, double repetitionPenalty,
             int64_t batchSize, bool returnScores, const std::string &errors,
             const std::string &splitSentences) {
            tfmc::TranslateOptions o = makeOptions(
                self.get().defaultOptions(), beamSize, nBest, lengthPenalty,
                maxLength, minLength, maxLengthFactor, maxLengthOffset,
                noRepeatNgramSize, repetitionPenalty, batchSize, false);
            o.scores = returnScores;
            if (std::string e = self.get().optionsError(o); !e.empty())
              raiseOptionError(e);
            if (splitSentences != "on" && splitSentences != "off" &&
                splitSentences != "auto")
              raiseOptionError("split_sentences: expected 'on', 'off' "
                               "or 'auto', got '" +
                               splitSentences + "'");
            if (splitSentences == "on" && (returnScores || nBest > 1))
              raiseOptionError(
                  "split_sentences='on' gives one translation a line: it "
                  "cannot go with n_best > 1 or return_scores");
            // Scores are never of split lines.
            o.splitSentences = returnScores ? "off" : splitSentences;
            std::vector<std::string> sentences = sentenceBytes(sentenceList);
            auto out = self.run(
                sentences,
                [&](const std::vector<std::string> &s) {
                  return self.get().translate(s, o);
                },
                errors);
            return results(out, nBest, returnScores,
                           [](const tfmc::Hypothesis &h) {
                             return py::str(h.text);
                           });
          },
          py::arg("sentences"), TFMC_TRANSLATE_ARGS,
          py::arg("split_sentences") = "auto",
          "Translates a list of sentences; returns their best translations "
          "(or, with n_best > 1 or return_scores, lists of (text, score)). "
          "split_sentences: 'on' translates each sentence of a line "
          "separately and joins the translations, 'off' translates lines "
          "whole, 'auto' splits when the model file has "
          "\"sentence_level\": true.")
      .def(
          "translate_ids",
          [](PyTranslator &self,
             const std::vector<std::vector<int32_t>> &sources,
             std::optional<int64_t> beamSize, int64_t nBest,
             std::optional<double> lengthPenalty, int64_t maxLength,
             int64_t minLength, double maxLengthFactor, int64_t maxLengthOffset,
             int64_t noRepeatNgramSize, double repetitionPenalty,
             int64_t batchSize, bool returnScores, const std::string &errors) {
            tfmc::TranslateOptions o = makeOptions(
                self.get().defaultOptions(), beamSize, nBest, lengthPenalty,
                maxLength, minLength, maxLengthFactor, maxLengthOffset,
                noRepeatNgramSize, repetitionPenalty, batchSize, false);
            o.scores = returnScores;
            if (std::string e = self.get().optionsError(o); !e.empty())
              raiseOptionError(e);
            auto out = self.run(
                sources,
                [&](const std::vector<std::vector<int32_t>> &s) {
                  return self.get().translateIds(s, o);
                },
                errors);
            return results(out, nBest, returnScores,
                           [](const tfmc::Hypothesis &h) {
                             return py::cast(h.ids);
                           });
          },
          py::arg("sources"), TFMC_TRANSLATE_ARGS,
          "Translates token-id sources (eos is appended); returns target "
          "id lists.")
      .def(
          "encode",
          [](PyTranslator &self,
             const std::vector<std::vector<int32_t>> &sources) {
            tfmc::Result<tfmc::EncoderStates> states =
                tfmc::Result<tfmc::EncoderStates>::failure("");
            {
              py::gil_scoped_release release;
              states = self.get().encode(sources);
            }
            if (!states)
              throw std::runtime_error(states.error());
            // Rows cut to the model's positions are said, as translate
            // and `tfmc encode` say them.
            for (size_t r = 0; r < sources.size(); ++r)
              if (static_cast<int64_t>(sources[r].size()) + 1 >
                  states->lengths[r]) {
                std::string text = "row " + std::to_string(r) + ": " +
                                   std::to_string(sources[r].size()) +
                                   " ids, truncated to " +
                                   std::to_string(states->lengths[r] - 1) +
                                   " (the model's max_len with eos)";
                if (PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1) != 0)
                  throw py::error_already_set();
              }
            py::array_t<float> array(
                {states->batch, states->length, states->dModel});
            std::copy(states->values.begin(), states->values.end(),
                      array.mutable_data());
            return array;
          },
          py::arg("sources"),
          "Encoder states of token-id sources as a float32 array [B, L, "
          "d_model] (zero past each row's ids + eos).")
      .def(
          "profile",
          [](PyTranslator &self) {
            tfmc::Result<tfmc::Profile> p = self.get().profile();
            if (!p)
              throw std::runtime_error(p.error());
            py::list rows, functions;
            for (const tfmc::ProfileRow &r : p->rows) {
              py::dict row;
              row["category"] = r.category;
              row["function"] = r.function;
              row["kind"] = r.kind;
              row["name"] = r.name;
              row["detail"] = r.detail;
              row["calls"] = r.calls;
              row["seconds"] = r.seconds;
              row["share"] = r.share;
              row["flop"] = r.flop;
              row["bytes"] = r.bytes;
              row["gflops"] = r.gflops;
              row["gbs"] = r.gbs;
              row["roofline"] = r.roofline;
              row["arithmetic"] = r.arithmetic;
              rows.append(row);
            }
            for (const tfmc::ProfileFunction &f : p->functions) {
              py::dict fn;
              fn["name"] = f.name;
              fn["calls"] = f.calls;
              fn["seconds"] = f.seconds;
              functions.append(fn);
            }
            py::dict out;
            out["host"] = p->host;
            out["threads"] = p->threads;
            out["peak_gflops"] = p->peakGflops;
            out["bandwidth_gbs"] = p->bandwidthGBs;
            out["bfloat16_peak_gflops"] = p->bfloat16Gflops;
            out["int8_peak_gops"] = p->int8Gops;
            out["wall_seconds"] = p->wallSeconds;
            out["functions"] = functions;
            out["rows"] = rows;
            return out;
          },
          "With profile=True: where the translate calls since load (or "
          "reset_profile) spent their time, as a dict (host, limits, "
          "wall_seconds, functions, rows sorted by time; the fields of "
          "docs/profile.md).")
      .def(
          "profile_text",
          [](PyTranslator &self, const std::string &format) {
            tfmc::Result<tfmc::Profile> p = self.get().profile();
            if (!p)
              throw std::runtime_error(p.error());
            tfmc::Result<std::string> text = tfmc::formatProfile(*p, format);
            if (!text)
              throw py::value_error(text.error());
            return *text;
          },
          py::arg("format") = "md",
          "The profile as 'md', 'json', 'csv' or 'svg' text, as tfmc "
          "profile writes it.")
      .def(
          "reset_profile",
          [](PyTranslator &self) { self.get().resetProfile(); },
          "Zeroes the profile's counters.")
      .def_property_readonly(
          "source_vocabulary_size",
          [](PyTranslator &self) { return self.get().sourceVocabularySize(); })
      .def_property_readonly(
          "target_vocabulary_size",
          [](PyTranslator &self) { return self.get().targetVocabularySize(); })
      .def_property_readonly(
          "encoder_only",
          [](PyTranslator &self) { return self.get().encoderOnly(); })
      .def_property_readonly(
          "configuration",
          [](PyTranslator &self) { return self.get().configuration(); },
          "What the compiled code computes with, e.g. 'float32 weights, "
          "float32 keys/values, library kernels'.");
}
