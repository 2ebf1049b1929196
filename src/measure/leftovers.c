/* What a C kernel may leave running after it returns: threads and child processes. A process in
 * which one still runs is not clean: the kernel's code may still run (so it must not be unloaded),
 * and whatever runs may crash or write into the next config's buffers. OpenMP's thread pool is the
 * runtime's, not a leftover: it is released before looking, so a pool grown or shrunk by a
 * config's thread count never counts against it. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <dirent.h>
#include <link.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/evaluator.h"

void ht_threads_free(ht_threads *t) {
  free(t->tid);
  t->tid = NULL;
  t->n = t->cap = 0;
}

/* /proc/self/task stays open between listings: read again from its start it costs a third of
 * opening it anew. One lister at a time uses it; another opens its own. A child after fork()
 * leaves the parent's alone (it names the parent's threads, and the child may have closed its
 * descriptor and reused the number) and opens one of its own. */
static pthread_mutex_t task_dir_mu = PTHREAD_MUTEX_INITIALIZER;
static DIR *task_dir, *inherited_task_dir;
static pid_t task_dir_pid;

static DIR *task_dir_take(int *kept) {
  *kept = 0;
  if (pthread_mutex_trylock(&task_dir_mu) != 0) return opendir("/proc/self/task");
  pid_t me = getpid();
  if (task_dir && task_dir_pid != me) {
    inherited_task_dir = task_dir; /* kept reachable, never closed here */
    task_dir = NULL;
  }
  if (task_dir) {
    rewinddir(task_dir);
  } else {
    task_dir = opendir("/proc/self/task");
    task_dir_pid = me;
  }
  if (task_dir) *kept = 1;
  else pthread_mutex_unlock(&task_dir_mu);
  return task_dir;
}

static void task_dir_give(DIR *d, int kept) {
  if (kept) pthread_mutex_unlock(&task_dir_mu);
  else if (d) closedir(d);
}

ht_status ht_threads_list(ht_threads *t) {
  t->n = 0;
  int kept;
  DIR *d = task_dir_take(&kept);
  if (!d) return ht_error(HT_ERR_IO, "/proc/self/task: %s", strerror(errno));
  ht_status st = HT_OK;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (t->n == t->cap) {
      int cap = t->cap ? 2 * t->cap : 64;
      pid_t *p = realloc(t->tid, sizeof *p * (size_t)cap);
      if (!p) {
        st = ht_error(HT_ERR_NOMEM, "out of memory");
        break;
      }
      t->tid = p;
      t->cap = cap;
    }
    t->tid[t->n++] = (pid_t)atoi(e->d_name);
  }
  task_dir_give(d, kept);
  return st;
}

/* Threads now that are not in `before`. */
static int new_threads(const ht_threads *before, ht_threads *now) {
  if (ht_threads_list(now)) return -1;
  int extra = 0;
  for (int i = 0; i < now->n; i++) {
    int known = 0;
    for (int j = 0; j < before->n && !known; j++) known = now->tid[i] == before->tid[j];
    extra += !known;
  }
  return extra;
}

/* Live child processes (reaping the dead ones): with the worker a child subreaper, this includes
 * the orphans of processes a kernel forked. */
static int live_children(void) {
  for (;;) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) continue;
    if (p < 0 && errno == EINTR) continue;
    return p == 0;
  }
}

/* The loaded OpenMP runtimes, by path. */
typedef struct runtimes {
  int n;
  char path[4][512];
} runtimes;

static int find_openmp(struct dl_phdr_info *info, size_t size, void *ctx) {
  (void)size;
  runtimes *r = ctx;
  const char *base = strrchr(info->dlpi_name, '/');
  base = base ? base + 1 : info->dlpi_name;
  int omp = strncmp(base, "libgomp.", 8) == 0 || strncmp(base, "libomp.", 7) == 0 || strncmp(base, "libiomp5.", 9) == 0;
  if (omp && r->n < 4) snprintf(r->path[r->n++], sizeof r->path[0], "%s", info->dlpi_name);
  return 0;
}

/* Ends the thread pools of the OpenMP runtimes loaded here (OpenMP 5.0 omp_pause_resource_all):
 * their threads exit now, and the next parallel region starts new ones. Not from within
 * dl_iterate_phdr: exiting threads may need the loader's lock. */
static void release_openmp_pools(void) {
  runtimes r = {0};
  dl_iterate_phdr(find_openmp, &r);
  for (int i = 0; i < r.n; i++) {
    void *h = dlopen(r.path[i], RTLD_NOW | RTLD_NOLOAD); /* a loaded path: no search */
    int (*pause_all)(int) = NULL;
    if (h) *(void **)&pause_all = dlsym(h, "omp_pause_resource_all");
    if (pause_all) pause_all(2); /* omp_pause_hard */
    if (h) dlclose(h);
  }
}

int ht_leftovers_gone(ht_threads *baseline, int children, double settle_s, char *msg, size_t len) {
  ht_threads now = {0};
  /* Nothing new: no OpenMP pool to release either (most kernels; a pool is released and the
   * threads counted again only when there are new threads). */
  int threads = new_threads(baseline, &now), procs = children && live_children();
  if (threads != 0 || procs) release_openmp_pools();
  for (double until = ht_now() + settle_s; threads != 0 || procs; poll(NULL, 0, 2)) {
    threads = new_threads(baseline, &now);
    procs = children && live_children();
    if ((threads == 0 && !procs) || ht_now() > until) break;
  }
  int clean = threads == 0 && !procs;
  if (!clean)
    snprintf(msg, len, "%s%s%s still running after the kernel returned", threads ? "threads" : "",
             threads && procs ? " and " : "", procs ? "child processes" : "");
  if (now.n > 0) { /* what runs now is the next baseline: threads that ended leave it */
    ht_threads_free(baseline);
    *baseline = now;
  } else {
    ht_threads_free(&now);
  }
  return clean;
}
