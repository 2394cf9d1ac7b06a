//===- SessionFrames.h - what Session's files share ------------*- C++ -*-===//
//
// Internal to runtime/session: the call frames a Session leases to each
// call (Session.cpp owns the pool; SessionForward.cpp and SessionDecode.cpp
// use it) and small helpers of the three files.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_SESSIONFRAMES_H
#define RUNTIME_SESSION_SESSIONFRAMES_H

#include "runtime/session/CallFrame.h"
#include "runtime/session/DecoderArena.h"
#include "runtime/session/Session.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <memory>

namespace tfmc::runtime {

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

inline llvm::Error sessionError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// One call frame per compiled function, with weights and the positional
/// table bound once.
struct Session::Frames {
  std::unique_ptr<CallFrame> encode, decodeStep, decodeGreedy, decodeBeam,
      forward, encodeStates;
  /// The batch decoders' buffers, reused from batch to batch.
  DecoderArena arena;
  explicit Frames(const CompiledModel &m) {
    if (const CompiledFunction *f = m.function("encode_states"))
      encodeStates = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("encode"))
      encode = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("decode_step"))
      decodeStep = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("decode_greedy"))
      decodeGreedy = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("decode_beam"))
      decodeBeam = std::make_unique<CallFrame>(*f);
    if (const CompiledFunction *f = m.function("forward"))
      forward = std::make_unique<CallFrame>(*f);
  }
};

/// Call frames held for the duration of one call.
class Session::FramesLease {
public:
  explicit FramesLease(Session &s) : session(s), f(&s.acquireFrames()) {}
  FramesLease(const FramesLease &) = delete;
  FramesLease(FramesLease &&other) noexcept
      : session(other.session), f(other.f) {
    other.f = nullptr;
  }
  ~FramesLease() {
    if (f)
      session.releaseFrames(*f);
  }
  Frames &operator*() { return *f; }
  Frames *operator->() { return f; }

private:
  Session &session;
  Frames *f;
};

/// The error for decoder work asked of an encoder-only model.
inline llvm::Error noDecoder(const frontend::Model &model,
                             llvm::StringRef what) {
  return sessionError(frontend::needsDecoderMessage(model.desc.jsonPath, what));
}

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_SESSIONFRAMES_H
