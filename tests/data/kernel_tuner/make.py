#!/usr/bin/env python3
"""Regenerates the Kernel Tuner files that hetune's tests read (tests/test_recorded_io.c).

Made with Kernel Tuner 1.5.0 (pip install kernel_tuner==1.5.0), Python 3.11, g++ 12 on x86-64
Linux. Run from anywhere:

    python3 -m venv /tmp/kt && /tmp/kt/bin/pip install kernel_tuner==1.5.0
    /tmp/kt/bin/python tests/data/kernel_tuner/make.py

It tunes a small C function (a sum with a tunable unroll and accumulator type) exhaustively with
Kernel Tuner's C backend and writes, next to this script:

  t4_results.json   the T4 results file, written as Kernel Tuner's users write it
                    (kernel_tuner.file_utils.store_output_file): times in milliseconds, said
                    by "metadata": {"timeunit": "milliseconds"}
  cache.json        the cache file tune_kernel(..., cache=...) keeps (times in milliseconds)
  results-schema.json  Kernel Tuner's copy of the T4 1.0.0 results schema (from
                    odgaard/TuningSchema; Kernel Tuner is under the Apache License 2.0), which
                    the tests use to validate hetune's own T4 export (they skip that check
                    without Python's jsonschema)

and prints what the tests check: the best time and the sums of what the evaluations took (T4:
compilation + benchmark + framework + validation, where benchmark covers the runtimes and
search_algorithm is the strategy's own time; cache: compile, verification, benchmark and framework
times). The config acc_t=double, unroll=8 fails to compile on purpose (a static_assert with a
message Kernel Tuner takes for a GPU compiler's out-of-memory error), so both files hold a failure
as Kernel Tuner writes it. The times are this machine's: regenerating changes the numbers, so
update the constants in tests/test_recorded_io.c with what this prints.
"""
import json
import os
import shutil
from importlib.metadata import version
from pathlib import Path

import numpy as np
import kernel_tuner
from kernel_tuner import file_utils, tune_kernel

HERE = Path(__file__).resolve().parent

KERNEL = r"""
#include <time.h>

extern "C" float sum(float *out, const float *in, int n) {
    /* Kernel Tuner records a compile error as a failed config only when its message is one of
       the GPU compilers' out-of-memory messages; other compile errors stop the run. */
    static_assert(sizeof(acc_t) * unroll <= 32, "local memory limit exceeded");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    acc_t acc[unroll] = {0};
    for (int i = 0; i + unroll <= n; i += unroll)
        for (int u = 0; u < unroll; u++) acc[u] += in[i + u];
    acc_t total = 0;
    for (int u = 0; u < unroll; u++) total += acc[u];
    out[0] = (float)total;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (float)((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6);
}
"""


def main():
    n = np.int32(1 << 16)
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    args = [np.zeros(1, dtype=np.float32), x, n]
    tune_params = {"unroll": [1, 2, 4, 8], "acc_t": ["float", "double"]}
    cache = HERE / "cache.json"
    if cache.exists():
        cache.unlink()  # a cache that exists is read, not measured again
    results, _ = tune_kernel("sum", KERNEL, n, args, tune_params, lang="C", compiler_options=["-O2"],
                             cache=str(cache), verbose=False, quiet=True)
    file_utils.store_output_file(str(HERE / "t4_results.json"), results, tune_params)
    schema = Path(kernel_tuner.__file__).parent / "schema" / "T4" / "1.0.0" / "results-schema.json"
    shutil.copyfile(schema, HERE / "results-schema.json")

    t4 = json.loads((HERE / "t4_results.json").read_text())
    print("kernel_tuner", version("kernel_tuner"), "timeunit", t4["metadata"]["timeunit"])
    parts = ("compilation", "benchmark", "framework", "validation")
    cost = sum(r["times"][k] for r in t4["results"] for k in parts)
    best = min(m["value"] for r in t4["results"] if r["invalidity"] == "correct"
               for m in r["measurements"] if m["name"] == "time")
    print(f"t4: {len(t4['results'])} results, sum of {'+'.join(parts)} = {cost!r} ms, best time {best!r} ms")
    kt = json.loads(cache.read_text())
    parts = ("compile_time", "verification_time", "benchmark_time", "framework_time")
    cost = sum(e.get(k, 0) for e in kt["cache"].values() for k in parts)
    print(f"cache: {len(kt['cache'])} entries, sum of {'+'.join(parts)} = {cost!r} ms")


if __name__ == "__main__":
    os.chdir(HERE)  # Kernel Tuner compiles in temporary files of the working folder
    main()
