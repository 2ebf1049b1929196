/* Black-Scholes (../blackscholes) on one thread or on every processor: two CPU versions of one
 * operation whose winner changes with the size, since a parallel region costs microseconds to
 * start. THREADS_ALL=1: as many threads as the machine has processors, whatever it is. */
#ifdef _OPENMP
#include <omp.h>
#endif
#if THREADS_ALL && defined(_OPENMP)
#define NTHREADS omp_get_num_procs()
#else
#define NTHREADS 1
#endif
#define CHUNK 0
#define BLOCK 64
#include "../blackscholes/blackscholes.c"
