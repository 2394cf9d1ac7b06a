//===- OneDnnLinear.cpp - linear layers through oneDNN matmul -------------===//
//
// y[M, N] = act(x[M, K] · Wᵀ + b) with W in PyTorch's [N, K] layout, as a
// oneDNN inner product (forward inference) with a bias and an eltwise
// post-op. One primitive per (M, K, N, activation) is created on first use
// and cached; oneDNN 2.x exceptions are caught here and recorded for the
// runtime. Worker threads of a session may run the same primitive at once,
// so each thread has its own stream and scratchpad (user scratchpad mode:
// oneDNN's shared library scratchpad would tie a primitive to the thread
// that created it).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/KernelAbi.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

extern "C" void omp_set_num_threads(int);

using namespace tfmc::runtime;

namespace {

struct LinearKey {
  int64_t m, k, n;
  int32_t activation;
  bool operator<(const LinearKey &o) const {
    return std::tie(m, k, n, activation) <
           std::tie(o.m, o.k, o.n, o.activation);
  }
};

struct LinearPrimitive {
  dnnl::memory::desc src, weights, bias, dst, scratchpad;
  dnnl::primitive primitive;
};

class OneDnn {
public:
  static OneDnn &get() {
    static OneDnn instance;
    return instance;
  }

  void linear(const MemRefDescriptor<3> &x, const MemRefDescriptor<2> &w,
              const MemRefDescriptor<1> &b, const MemRefDescriptor<3> &y,
              int32_t activation) {
    int64_t m = x.sizes[0] * x.sizes[1], k = x.sizes[2], n = w.sizes[0];
    if (m == 0)
      return;
    if (!contiguous(x) || !contiguous(y) || w.strides[1] != 1 ||
        w.strides[0] != k || b.strides[0] != 1 || y.sizes[2] != n ||
        w.sizes[1] != k) {
      fail("tfm_rt_linear: unexpected operand layout");
      return;
    }
    try {
      const LinearPrimitive &p = primitive({m, k, n, activation});
      dnnl::memory src(p.src, engine, x.aligned + x.offset);
      dnnl::memory weights(p.weights, engine, w.aligned + w.offset);
      dnnl::memory bias(p.bias, engine, b.aligned + b.offset);
      dnnl::memory dst(p.dst, engine, y.aligned + y.offset);
      thread_local std::vector<char> scratch;
      if (scratch.size() < p.scratchpad.get_size())
        scratch.resize(p.scratchpad.get_size());
      dnnl::memory scratchpad(p.scratchpad, engine, scratch.data());
      dnnl::stream &stream = threadStream();
      p.primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                   {DNNL_ARG_WEIGHTS, weights},
                                   {DNNL_ARG_BIAS, bias},
                                   {DNNL_ARG_DST, dst},
                                   {DNNL_ARG_SCRATCHPAD, scratchpad}});
      stream.wait();
    } catch (const dnnl::error &e) {
      fail(std::string("oneDNN: ") + e.what());
    }
  }

  void fail(const std::string &message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (error.empty())
      error = message;
  }

  std::string takeError() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string e = std::move(error);
    error.clear();
    return e;
  }

private:
  OneDnn() : engine(dnnl::engine::kind::cpu, 0) {}

  dnnl::stream &threadStream() {
    thread_local std::unique_ptr<dnnl::stream> stream;
    if (!stream)
      stream = std::make_unique<dnnl::stream>(engine);
    return *stream;
  }

  static bool contiguous(const MemRefDescriptor<3> &d) {
    return d.strides[2] == 1 && d.strides[1] == d.sizes[2] &&
           d.strides[0] == d.sizes[1] * d.sizes[2];
  }

  const LinearPrimitive &primitive(const LinearKey &key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    LinearPrimitive p;
    p.src = dnnl::memory::desc({key.m, key.k}, dt::f32, tag::ab);
    // An inner product takes W in PyTorch's [N, K] ("oi") layout as is.
    p.weights = dnnl::memory::desc({key.n, key.k}, dt::f32, tag::oi);
    p.bias = dnnl::memory::desc({key.n}, dt::f32, tag::a);
    p.dst = dnnl::memory::desc({key.m, key.n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (key.activation != static_cast<int32_t>(KernelActivation::None)) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f,
                         key.activation ==
                                 static_cast<int32_t>(KernelActivation::Relu)
                             ? dnnl::algorithm::eltwise_relu
                             : dnnl::algorithm::eltwise_gelu_erf,
                         0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           p.src, p.weights, p.bias, p.dst);
    dnnl::inner_product_forward::primitive_desc pd(desc, attr, engine);
    p.scratchpad = pd.scratchpad_desc();
    p.primitive = dnnl::inner_product_forward(pd);
    return cache.emplace(key, std::move(p)).first->second;
  }

  dnnl::engine engine;
  std::mutex mutex;
  std::map<LinearKey, LinearPrimitive> cache;
  std::string error;
};

} // namespace

extern "C" void _mlir_ciface_tfm_rt_linear(MemRefDescriptor<3> *x,
                                           MemRefDescriptor<2> *w,
                                           MemRefDescriptor<1> *b,
                                           MemRefDescriptor<3> *y,
                                           int32_t activation) {
  OneDnn::get().linear(*x, *w, *b, *y, activation);
}

bool tfmc::runtime::haveLibraryKernels() { return true; }

void tfmc::runtime::setKernelThreads(int threads) {
  omp_set_num_threads(threads);
}

std::string tfmc::runtime::takeKernelError() {
  return OneDnn::get().takeError();
}

std::vector<std::pair<std::string, void *>> tfmc::runtime::kernelSymbols() {
  auto symbols = bufferPoolSymbols();
  symbols.emplace_back("_mlir_ciface_tfm_rt_linear",
                       reinterpret_cast<void *>(&_mlir_ciface_tfm_rt_linear));
  return symbols;
}
