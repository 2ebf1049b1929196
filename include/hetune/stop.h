/* Stopping a C/OpenMP kernel by signal, for kernels with no place to poll their stop flag.
 *
 * A kernel of the c backend declares a stop flag (docs/spec.md: "stop": true) and normally polls
 * it: `if (*stop) return;` once per outer iteration. A kernel whose threads have no such place (one
 * long inner loop, code you would rather not touch) can be stopped instead by a signal: each thread
 * wraps its share of the work between HT_PAR_BEGIN and HT_PAR_END, and when a race stops the kernel
 * (ht_device_cancel; a race's losers, docs/race.md) hetune sends every thread inside such a region a signal whose
 * handler jumps to the region's end. The kernel includes this header (the c backend puts it on the
 * compiler's include path):
 *
 *   #include <hetune/stop.h>
 *   void scale(float *x, int n, volatile int32_t *stop) {
 *     #pragma omp parallel
 *     {
 *       int t = omp_get_thread_num(), nt = omp_get_num_threads();
 *       HT_PAR_BEGIN(stop, t);
 *       for (int i = t * (n / nt); i < (t == nt - 1 ? n : (t + 1) * (n / nt)); i++) x[i] *= 2;
 *       HT_PAR_END();
 *     }
 *   }
 *
 * Rules, because a thread may be stopped between any two instructions of the region:
 * - the region's body takes no lock and allocates nothing (no malloc, printf, omp critical): a
 *   jump out of the middle of those would leave them locked for ever;
 * - no barrier or worksharing construct inside (no omp for, omp barrier): a stopped thread would
 *   never reach it; give each thread its share by hand as above, the region ends at the parallel
 *   region's own barrier;
 * - leave the region only through HT_PAR_END: no `return`, `goto` out of it, or `break` outside a
 *   loop of the body's own (a thread that left unseen could be sent a jump into a finished frame);
 * - results of a stopped kernel are partial: a race discards them (only the winner's reach you).
 * Without a stop (a synchronous launch, a tuning run) the macros cost two atomic operations per
 * thread and nothing else. Linux only (it sends the signal with pthread_sigqueue); the signal is
 * SIGUSR2, whose earlier handler, if any, still gets every SIGUSR2 that is not hetune's own.
 * Threads past the first HT_STOP_SLOTS of a launch (the block's slot count) are not stopped by
 * signal; they only see the flag.
 *
 * docs/runtime.md, "Stopping by signal", has a complete kernel. The layout below is shared by the
 * kernel (through the macros) and hetune's c backend. */
#ifndef HETUNE_STOP_H
#define HETUNE_STOP_H

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdint.h>

#define HT_STOP_MAGIC 0x48545350u /* "HTSP": the flag is the first field of a stop block */

enum { HT_STOP_OUTSIDE = 0, HT_STOP_INSIDE = 1, HT_STOP_STOPPING = 2 };

/* One thread's place: where its region ends, who it is, and whether it is inside. */
typedef struct ht_stop_slot {
  sigjmp_buf end;   /* the region's end, where the signal handler jumps */
  pthread_t thread; /* the thread inside, set when it enters */
  int32_t state;    /* HT_STOP_OUTSIDE, _INSIDE, or _STOPPING (a signal is on its way) */
} ht_stop_slot;

/* What the c backend passes as a kernel's stop flag: the flag first, so a kernel reading *stop
 * sees it, then the slots of the threads a signal can stop. */
typedef struct ht_stop_block {
  volatile int32_t stop; /* raised when the launch is stopped */
  uint32_t magic;        /* HT_STOP_MAGIC */
  int32_t n_slots;       /* 0: nobody can stop this launch by signal (a synchronous launch) */
  int32_t reserved;
  ht_stop_slot *slots;
} ht_stop_block;

/* Thread tid's slot, or NULL when a signal cannot stop it. */
static inline ht_stop_slot *ht_stop_slot_of_(volatile int32_t *flag, int tid) {
  ht_stop_block *b = (ht_stop_block *)(uintptr_t)flag;
  if (!b || b->magic != HT_STOP_MAGIC || tid < 0 || tid >= b->n_slots) return 0;
  return &b->slots[tid];
}

/* Marks the thread inside; 0 when the launch is already stopped (then it skips the region). The
 * flag is read after the slot is marked and the stopper marks the flag before reading slots, so
 * either the stopper sees this thread inside or this thread sees the flag. */
static inline int ht_stop_enter_(ht_stop_slot *s, volatile int32_t *flag) {
  int32_t outside = HT_STOP_OUTSIDE;
  s->thread = pthread_self();
  if (!__atomic_compare_exchange_n(&s->state, &outside, HT_STOP_INSIDE, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return 0;
  if (!__atomic_load_n(flag, __ATOMIC_SEQ_CST)) return 1;
  __atomic_store_n(&s->state, HT_STOP_OUTSIDE, __ATOMIC_SEQ_CST);
  return 0;
}

/* Marks the thread outside. A signal already on its way is waited for: its handler jumps to the
 * end of this same region, and it must not find the thread gone. */
static inline void ht_stop_leave_(ht_stop_slot *s) {
  for (;;) {
    int32_t inside = HT_STOP_INSIDE;
    if (__atomic_compare_exchange_n(&s->state, &inside, HT_STOP_OUTSIDE, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return;
    sched_yield();
  }
}

/* The region: each thread's share of a parallel region, which a signal may end. tid numbers the
 * threads from 0 (omp_get_thread_num()); flag is the kernel's stop flag argument. */
#define HT_PAR_BEGIN(flag, tid)                                                                  \
  do {                                                                                           \
    ht_stop_slot *ht_slot_ = ht_stop_slot_of_((flag), (tid));                                    \
    if (ht_slot_) {                                                                              \
      if (sigsetjmp(ht_slot_->end, 1)) break;                                                    \
      if (!ht_stop_enter_(ht_slot_, (flag))) break;                                              \
    }                                                                                            \
    {
#define HT_PAR_END()                                                                             \
    }                                                                                            \
    if (ht_slot_) ht_stop_leave_(ht_slot_);                                                      \
  } while (0)

#endif
