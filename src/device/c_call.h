/* Calling a kernel the c backend compiled, with a launch's arguments: straight in registers where
 * the ABI allows it (x86-64 System V: up to six integer and eight floating-point arguments), else
 * through libffi, with the call description libffi prepares kept per program. */
#ifndef HT_DEVICE_C_CALL_H
#define HT_DEVICE_C_CALL_H

#include <ffi.h>
#include <pthread.h>
#include <stdint.h>

#include "device/backend.h"

#if defined(__x86_64__) && defined(__linux__)
#include <emmintrin.h> /* SSE2: __m128 and the float and double moves */
#define HT_C_CALL_REGISTERS 1
#endif

/* Argument vectors of up to HT_C_CALL_INLINE arguments live inside the call (on the caller's stack
 * for a synchronous launch), and a program keeps its description for that many. */
enum { HT_C_CALL_INLINE = 16 };

/* A program's call description, prepared by libffi at its first launch and kept (the argument types
 * are the spec's, the same at every launch). */
typedef struct ht_c_call_desc {
  pthread_mutex_t mu;
  int ready, n; /* ready: set (atomically) once cif and types are written, never written again */
  ffi_cif cif;
  ffi_type *types[HT_C_CALL_INLINE];
} ht_c_call_desc;

/* One call's arguments. */
typedef struct ht_c_call {
  int in_registers; /* 1: made by register (ints, vecs), libffi's vectors unused */
#ifdef HT_C_CALL_REGISTERS
  uint64_t ints[6];
  __m128 vecs[8];
#endif
  ffi_cif cif;
  ffi_type **types;
  void **values;
  ht_scalar *scalars;
  void **ptrs;
  void *heap; /* the four vectors of a longer call, in one block */
  ffi_type *types_in[HT_C_CALL_INLINE];
  void *values_in[HT_C_CALL_INLINE];
  ht_scalar scalars_in[HT_C_CALL_INLINE];
  void *ptrs_in[HT_C_CALL_INLINE];
} ht_c_call;

void ht_c_call_desc_init(ht_c_call_desc *d);
void ht_c_call_desc_destroy(ht_c_call_desc *d);

/* Fills c for the launch's arguments: a buffer passes host_of(buffer), a stop flag the pointer
 * stop, a scalar its value converted to its type. c needs no initialisation; ht_c_call_free
 * releases it, also after an error. */
ht_status ht_c_call_prepare(ht_c_call_desc *d, const ht_launch *l, void *(*host_of)(ht_buffer *),
                            volatile int32_t *stop, ht_c_call *c);
void ht_c_call_run(void (*fn)(void), ht_c_call *c);
void ht_c_call_free(ht_c_call *c);

#endif
