/* Threads that run the c backend's asynchronous launches, kept between launches. A C kernel
 * threads itself with OpenMP, and OpenMP keeps a team of threads per thread that starts parallel
 * regions: a launch on a new thread each time paid for a new team each time, one thread per core.
 * A worker that stays keeps its team for the next launch.
 *
 * Idle workers wait on a list, most recently used first, so the same worker (and team) serves a
 * sequence of launches; a launch while every worker is busy starts another. At most MAX_IDLE stay;
 * a worker beyond that ends after its call. After fork() the child has none of these threads: its
 * list starts empty. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "device/backend.h"

enum { MAX_IDLE = 8 };

typedef struct c_worker {
  pthread_t thread;
  pthread_cond_t cv;
  void (*run)(void *);
  void (*done)(void *);
  void *arg;
  struct c_worker *next; /* in the idle list */
} c_worker;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static c_worker *idle;
static int n_idle;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) { pthread_mutex_lock(&pool_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&pool_mu); }
static void fork_child(void) {
  idle = NULL; /* their threads are not in this process; their memory is left behind */
  n_idle = 0;
  pthread_mutex_unlock(&pool_mu);
}
static void register_atfork(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* Onto the idle list, first in line; 0 when the list is full and the worker is to end. */
static int go_idle(c_worker *w) {
  pthread_mutex_lock(&pool_mu);
  int room = n_idle < MAX_IDLE;
  if (room) {
    w->run = NULL;
    w->next = idle;
    idle = w;
    n_idle++;
  }
  pthread_mutex_unlock(&pool_mu);
  return room;
}

static void wait_for_job(c_worker *w) {
  pthread_mutex_lock(&pool_mu);
  while (!w->run) pthread_cond_wait(&w->cv, &pool_mu);
  pthread_mutex_unlock(&pool_mu);
}

/* The worker is back on the list before it says the job is done, so the caller's next launch
 * finds it there first. */
static void *worker_main(void *arg) {
  c_worker *w = arg;
  ht_stop_signal_unblock(); /* here and in the OpenMP threads this thread starts */
  for (;;) {
    w->run(w->arg);
    void (*done)(void *) = w->done, *job = w->arg;
    int stays = go_idle(w);
    done(job);
    if (!stays) break;
    wait_for_job(w);
  }
  pthread_cond_destroy(&w->cv);
  free(w);
  return NULL;
}

int ht_c_worker_submit(void (*run)(void *arg), void (*done)(void *arg), void *arg) {
  pthread_once(&atfork_once, register_atfork);
  pthread_mutex_lock(&pool_mu);
  c_worker *w = idle;
  if (w) {
    idle = w->next;
    n_idle--;
    w->done = done;
    w->arg = arg;
    w->run = run;
    pthread_cond_signal(&w->cv);
  }
  pthread_mutex_unlock(&pool_mu);
  if (w) return 0;
  if (!(w = calloc(1, sizeof *w))) return ENOMEM;
  pthread_cond_init(&w->cv, NULL);
  w->run = run;
  w->done = done;
  w->arg = arg;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int err = pthread_create(&w->thread, &attr, worker_main, w);
  pthread_attr_destroy(&attr);
  if (err) {
    pthread_cond_destroy(&w->cv);
    free(w);
  }
  return err;
}
