//===- GnuOpenMp.h - the GNU OpenMP entry points the kernels call -*- C++ -*-===//
//
// Debian's oneDNN runs on GNU OpenMP (libgomp). The library kernels set its
// thread count and run the packed kernels' column shares on its threads
// through these entry points (GOMP_parallel is what `#pragma omp parallel`
// compiles to with g++), so no OpenMP-enabled compiler is needed.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_KERNELS_GNUOPENMP_H
#define RUNTIME_KERNELS_GNUOPENMP_H

extern "C" {
void omp_set_num_threads(int);
int omp_get_max_threads(void);
int omp_get_thread_num(void);
int omp_get_num_threads(void);
/// Runs fn(data) on a team of up to `threads` threads, the caller among
/// them, and returns when all have finished.
void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads,
                   unsigned flags);
}

#endif // RUNTIME_KERNELS_GNUOPENMP_H
