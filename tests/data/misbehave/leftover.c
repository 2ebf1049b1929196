/* A kernel that leaves something behind after it returns, one way per MODE: hetune must blame
 * nothing on the next config, and no process may outlive the tuner. Pids of forked processes are
 * appended to the file $HT_TEST_PIDS, for the test to check they are gone.
 * 0 correct; 1 a thread that sleeps in this code, then returns into it; 2 a child that spins;
 * 3 a child that spins, then this process crashes; 4 an orphaned grandchild that spins;
 * 5 and 6 OpenMP with 4 and 2 threads (a runtime's thread pool, not a leftover);
 * 7 correct, but the compiler hangs (the test's compiler wrapper sees -DMODE=7);
 * 8 a child that spins, then this process spins too (its own pid is noted as well);
 * 9 correct, but loading it starts a thread that waits in this code until the process ends. */
#include <fcntl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void note_pid(pid_t pid) {
  const char *path = getenv("HT_TEST_PIDS");
  int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT, 0600) : -1;
  if (fd >= 0) {
    dprintf(fd, "%d\n", (int)pid);
    close(fd);
  }
}

static void spin_forever(void) {
  volatile int on = 1;
  while (on) {
  }
}

static void *sleeper(void *arg) {
  (void)arg;
  struct timespec ts = {0, 500 * 1000 * 1000};
  nanosleep(&ts, NULL); /* returns into this object: unloaded by then, the process crashes */
  return NULL;
}

static pid_t spinning_child(void) {
  pid_t pid = fork();
  if (pid == 0) spin_forever();
  note_pid(pid);
  return pid;
}

#if MODE == 9
/* Never returns: the check that finds it may come long after the load on a slow or busy machine
 * (a batch's other kernels compile in between); the process's exit ends it. */
static void *waiter(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

__attribute__((constructor)) static void start_waiter(void) {
  pthread_t t;
  pthread_create(&t, NULL, waiter, NULL);
  pthread_detach(t);
}
#endif

void scale(float *out, const float *in, int n) {
#if MODE == 1
  pthread_t t;
  pthread_create(&t, NULL, sleeper, NULL);
  pthread_detach(t);
#elif MODE == 2
  static int forked;
  if (!forked++) spinning_child();
#elif MODE == 3
  spinning_child();
  volatile int *p = (int *)0;
  *p = 1;
#elif MODE == 4
  static int forked;
  pid_t mid = forked++ ? -1 : fork();
  if (mid == 0) {
    spinning_child();
    _exit(0);
  }
  if (mid > 0) waitpid(mid, NULL, 0);
#elif MODE == 8
  spinning_child();
  note_pid(getpid());
  spin_forever();
#endif
#if MODE == 5 || MODE == 6
#pragma omp parallel for num_threads(MODE == 5 ? 4 : 2)
#endif
  for (int i = 0; i < n; i++) out[i] = 2.0f * in[i];
}
