/* The c backend's side of stopping kernels by signal (include/hetune/stop.h): each launch's stop
 * block, the stopper that raises its flag and signals every thread inside a region, the handler
 * that jumps such a thread to its region's end, and the header itself on the compiler's path. */
#define _GNU_SOURCE /* pthread_sigqueue */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h> /* rename */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/backend.h"
#include "hetune/stop.h"

#define STOP_SIGNAL SIGUSR2

/* ---- the handler ---- */

static struct sigaction previous; /* SIGUSR2's handler before hetune's */
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_failed;

/* SIGUSR2 queued by this process is hetune's: its value is the slot of the thread it went to. A
 * slot still stopping is this thread's, inside its region: jump to the region's end. A signal
 * that arrives after the thread left on its own finds the slot outside and is dropped. Any other
 * SIGUSR2 goes to the handler there was before (the default action, if none: end the process). */
static void on_stop_signal(int sig, siginfo_t *info, void *context) {
  if (info && info->si_code == SI_QUEUE && info->si_pid == getpid()) {
    ht_stop_slot *s = info->si_value.sival_ptr;
    int32_t stopping = HT_STOP_STOPPING;
    if (s && pthread_equal(s->thread, pthread_self()) &&
        __atomic_compare_exchange_n(&s->state, &stopping, HT_STOP_OUTSIDE, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      siglongjmp(s->end, 1);
    return;
  }
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);
    raise(sig);
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_stop_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  install_failed = sigaction(STOP_SIGNAL, &sa, &previous) != 0;
}

void ht_stop_signal_unblock(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, STOP_SIGNAL);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* ---- stop blocks ---- */

int ht_stop_default_slots(void) {
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  return cpus > 4 ? (int)(cpus > 4096 ? 8192 : 2 * cpus) : 8;
}

ht_status ht_stop_block_init(ht_stop_block *b, int n_slots) {
  memset(b, 0, sizeof *b);
  b->magic = HT_STOP_MAGIC;
  if (n_slots <= 0) return HT_OK;
  b->slots = calloc((size_t)n_slots, sizeof *b->slots);
  if (!b->slots) return ht_error(HT_ERR_NOMEM, "out of memory");
  b->n_slots = n_slots;
  return HT_OK;
}

void ht_stop_block_free(ht_stop_block *b) {
  free(b->slots);
  b->slots = NULL;
  b->n_slots = 0;
}

/* The flag first, then the slots (stop.h, ht_stop_enter_): a thread entering now sees the flag. A
 * slot marked stopping gets its signal; one that cannot be sent is set back, and its thread
 * finishes on its own or at the flag. */
void ht_stop_block_raise(ht_stop_block *b) {
  __atomic_store_n(&b->stop, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < b->n_slots; i++) {
    ht_stop_slot *s = &b->slots[i];
    int32_t inside = HT_STOP_INSIDE;
    if (!__atomic_compare_exchange_n(&s->state, &inside, HT_STOP_STOPPING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      continue;
    pthread_once(&install_once, install);
    union sigval v = {.sival_ptr = s};
    if (install_failed || pthread_sigqueue(s->thread, STOP_SIGNAL, v) != 0) {
      ht_log(2, "c: cannot stop a kernel thread by signal: %s", strerror(install_failed ? EINVAL : errno));
      __atomic_store_n(&s->state, HT_STOP_INSIDE, __ATOMIC_SEQ_CST);
    }
  }
}

/* ---- the header on the compiler's path ---- */

/* <cache>/include/hetune/stop.h, written when missing or different (a temporary file renamed into
 * place: a compiler reading it meanwhile sees the old or the new text, whole). */
static ht_status write_whole(const char *path, const char *text) {
  char *tmp = ht_strfmt("%s.XXXXXX", path);
  int fd = tmp ? mkstemp(tmp) : -1;
  size_t len = strlen(text), done = 0;
  while (fd >= 0 && done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  int ok = fd >= 0 && done == len;
  if (fd >= 0 && close(fd) != 0) ok = 0;
  if (ok && rename(tmp, path) != 0) ok = 0;
  ht_status s = ok ? HT_OK : ht_error(HT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  if (!ok && fd >= 0) unlink(tmp);
  free(tmp);
  return s;
}

/* stop.h as this hetune wrote it: a stat while the file stays as it was checked or written. */
static uint64_t stop_h_hash;
static void hash_stop_h(void) { stop_h_hash = ht_hash64(ht_kernel_stop_h, strlen(ht_kernel_stop_h), 0); }

static ht_status put_stop_h(const char *path) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, hash_stop_h);
  uint64_t want = stop_h_hash, have = 0;
  if (ht_c_file_hash(path, &have) == HT_OK && have == want) return HT_OK;
  ht_error_clear();
  return write_whole(path, ht_kernel_stop_h);
}

ht_status ht_c_kernel_include_dir(char **out) {
  char *dir = NULL, *path = NULL;
  ht_status s = ht_cache_subdir("include/hetune", &dir);
  if (!s && !(path = ht_strfmt("%s/stop.h", dir))) s = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!s) s = put_stop_h(path);
  if (!s) {
    dir[strlen(dir) - strlen("/hetune")] = '\0';
    *out = dir;
    dir = NULL;
  }
  free(dir);
  free(path);
  return s;
}
