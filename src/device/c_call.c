/* Calling a compiled C kernel with a launch's arguments (c_call.h). libffi examines every
 * argument's type again at each call and prepares a description first: for a kernel of a few
 * elements that was most of the launch. On x86-64 System V, integer-class arguments (pointers,
 * integers) go in six general registers in their order and float and double arguments in eight
 * vector registers in theirs, however the two kinds interleave; a kernel with no more of each is
 * called through one prototype of six integers and eight vectors, each argument in the next
 * register of its class (a float in the low 32 bits of its vector, a double in the low 64, an
 * integer extended to 64 bits), the registers it does not take ignored. */
#include "device/c_call.h"

#include <stdlib.h>
#include <string.h>

void ht_c_call_desc_init(ht_c_call_desc *d) {
  memset(d, 0, sizeof *d);
  pthread_mutex_init(&d->mu, NULL);
}

void ht_c_call_desc_destroy(ht_c_call_desc *d) { pthread_mutex_destroy(&d->mu); }

void ht_c_call_free(ht_c_call *c) {
  free(c->heap);
  c->heap = NULL;
}

static ffi_type *ffi_type_of(ht_dtype t) {
  switch (t) {
  case HT_DTYPE_F32: return &ffi_type_float;
  case HT_DTYPE_F64: return &ffi_type_double;
  case HT_DTYPE_I32: return &ffi_type_sint32;
  case HT_DTYPE_U32: return &ffi_type_uint32;
  case HT_DTYPE_I64: return &ffi_type_sint64;
  case HT_DTYPE_U64: return &ffi_type_uint64;
  case HT_DTYPE_I8: return &ffi_type_sint8;
  case HT_DTYPE_U8: return &ffi_type_uint8;
  default: return NULL;
  }
}

static size_t aligned(size_t n) {
  const size_t a = _Alignof(max_align_t);
  return (n + a - 1) / a * a;
}

static ht_status vectors(ht_c_call *c, size_t n) {
  if (n <= HT_C_CALL_INLINE) {
    c->types = c->types_in, c->values = c->values_in, c->scalars = c->scalars_in, c->ptrs = c->ptrs_in;
    return HT_OK;
  }
  const size_t at_values = aligned(n * sizeof *c->types), at_scalars = at_values + aligned(n * sizeof *c->values),
               at_ptrs = at_scalars + aligned(n * sizeof *c->scalars);
  char *m = c->heap = calloc(1, at_ptrs + n * sizeof *c->ptrs); /* one block for the four */
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  c->types = (ffi_type **)m;
  c->values = (void **)(m + at_values);
  c->scalars = (ht_scalar *)(m + at_scalars);
  c->ptrs = (void **)(m + at_ptrs);
  return HT_OK;
}

static ht_status fill(const ht_launch *l, void *(*host_of)(ht_buffer *), volatile int32_t *stop, ht_c_call *c) {
  ht_status s = vectors(c, l->n_args > 0 ? (size_t)l->n_args : 1);
  for (int i = 0; !s && i < l->n_args; i++) {
    const ht_arg *arg = &l->args[i];
    if (arg->is_buffer || arg->is_stop_flag) {
      c->ptrs[i] = arg->is_buffer ? host_of(arg->buf) : (void *)(uintptr_t)stop;
      c->types[i] = &ffi_type_pointer;
      c->values[i] = &c->ptrs[i];
      continue;
    }
    c->types[i] = ffi_type_of(arg->type);
    if (!c->types[i]) return ht_error(HT_ERR_INVALID, "argument %d: unknown scalar type %d", i, (int)arg->type);
    s = ht_scalar_convert(arg->value, arg->type, i, &c->scalars[i]);
    c->values[i] = &c->scalars[i];
  }
  return s;
}

#ifdef HT_C_CALL_REGISTERS
typedef void (*register_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, __m128, __m128, __m128,
                            __m128, __m128, __m128, __m128, __m128);

static uint64_t integer_bits(const ffi_type *t, const ht_scalar *v) {
  if (t == &ffi_type_sint8) return (uint64_t)(int64_t)v->i8;
  if (t == &ffi_type_uint8) return v->u8;
  if (t == &ffi_type_sint32) return (uint64_t)(int64_t)v->i32;
  if (t == &ffi_type_uint32) return v->u32;
  return v->u64; /* sint64, uint64 */
}

/* c->in_registers when the call fits the registers. */
static void to_registers(int n, ht_c_call *c) {
  int ni = 0, nv = 0;
  memset(c->ints, 0, sizeof c->ints);
  memset(c->vecs, 0, sizeof c->vecs);
  for (int i = 0; i < n; i++) {
    const ffi_type *t = c->types[i];
    if (t == &ffi_type_float || t == &ffi_type_double) {
      if (nv == 8) return;
      c->vecs[nv++] = t == &ffi_type_float ? _mm_set_ss(c->scalars[i].f32) : _mm_castpd_ps(_mm_set_sd(c->scalars[i].f64));
    } else {
      if (ni == 6) return;
      c->ints[ni++] = t == &ffi_type_pointer ? (uint64_t)(uintptr_t)c->ptrs[i] : integer_bits(t, &c->scalars[i]);
    }
  }
  c->in_registers = 1;
}
#endif

/* c->cif for the types in c->types: the program's kept description (written at its first launch)
 * when they are its, else one prepared for this call. */
static ht_status describe(ht_c_call_desc *d, int n, ht_c_call *c) {
  const size_t bytes = sizeof *c->types * (size_t)n;
  if (n <= HT_C_CALL_INLINE && !__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&d->mu);
    if (!d->ready) {
      memcpy(d->types, c->types, bytes);
      d->n = n;
      if (ffi_prep_cif(&d->cif, FFI_DEFAULT_ABI, (unsigned)n, &ffi_type_void, d->types) == FFI_OK)
        __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&d->mu);
  }
  if (n <= HT_C_CALL_INLINE && __atomic_load_n(&d->ready, __ATOMIC_ACQUIRE) && d->n == n &&
      !memcmp(d->types, c->types, bytes)) {
    c->cif = d->cif; /* its argument types are d->types, never written again */
    return HT_OK;
  }
  if (ffi_prep_cif(&c->cif, FFI_DEFAULT_ABI, (unsigned)n, &ffi_type_void, c->types) != FFI_OK)
    return ht_error(HT_ERR_RUNTIME, "launch: libffi cannot describe the call (%d arguments)", n);
  return HT_OK;
}

ht_status ht_c_call_prepare(ht_c_call_desc *d, const ht_launch *l, void *(*host_of)(ht_buffer *),
                            volatile int32_t *stop, ht_c_call *c) {
  c->heap = NULL;
  c->in_registers = 0;
  ht_status s = fill(l, host_of, stop, c);
  if (s) return s;
#ifdef HT_C_CALL_REGISTERS
  to_registers(l->n_args, c);
  if (c->in_registers) return HT_OK;
#endif
  return describe(d, l->n_args, c);
}

void ht_c_call_run(void (*fn)(void), ht_c_call *c) {
#ifdef HT_C_CALL_REGISTERS
  if (c->in_registers) {
    register_fn f;
    memcpy(&f, &fn, sizeof f); /* as dlsym's pointer: a function pointer of another type */
    f(c->ints[0], c->ints[1], c->ints[2], c->ints[3], c->ints[4], c->ints[5], c->vecs[0], c->vecs[1], c->vecs[2],
      c->vecs[3], c->vecs[4], c->vecs[5], c->vecs[6], c->vecs[7]);
    return;
  }
#endif
  ffi_call(&c->cif, fn, NULL, c->values);
}
