"""Kernel Tuner replays hetune's cache export: tune a small space exhaustively with hetune, export it
with `hetune export --format kt-cache`, run Kernel Tuner's simulation mode on the file over the same
tunable parameters and restrictions, and check that it finds every config and hetune's best.
Usage: kt_cache_replay.py HETUNE SOURCE_DIR WORK_DIR. Exit 77 (skipped) without kernel_tuner."""
import json
import os
import subprocess
import sys

try:
    import kernel_tuner
except ImportError:
    print("kernel_tuner is not installed for", sys.executable, "(scripts/install-deps.sh installs it)")
    sys.exit(77)

hetune, src, work = sys.argv[1:4]
spec = os.path.join(src, "tests/data/kt_export/scale_c.json")
db, cache = os.path.join(work, "kt.db"), os.path.join(work, "kt_cache.json")
os.makedirs(work, exist_ok=True)
for f in (db, cache):
    if os.path.exists(f):
        os.remove(f)
run = lambda *a: subprocess.run([hetune, *a], check=True, capture_output=True, text=True).stdout
run("tune", spec, "--strategy", "brute_force", "--db", db, "-q")
run("export", "--format", "kt-cache", "--kernel", "scale", "--db", db, "--output", cache)
best = json.loads(run("best", spec, "--format", "json", "--db", db))[0]

with open(spec) as f:
    tune_params = json.load(f)["parameters"]
restrictions = ["BS * U <= 64"]
results, env = kernel_tuner.tune_kernel(
    "scale", "/* not compiled in simulation mode */", 1000, [], tune_params, restrictions=restrictions,
    cache=cache, simulation_mode=True, strategy="brute_force", quiet=True)

valid = [r for r in results if isinstance(r.get("time"), float)]
n_space = sum(1 for bs in tune_params["BS"] for u in tune_params["U"] for _ in tune_params["F"] if bs * u <= 64)
assert len(valid) == n_space, f"Kernel Tuner replayed {len(valid)} configs of {n_space}"
kt_best = min(r["time"] for r in valid)
want = best["config"]
mine = [r for r in valid if {k: r[k] for k in tune_params} == want]
assert len(mine) == 1, f"hetune's best {want} is not among Kernel Tuner's results"
# Times tie at the clock's resolution: hetune's best must be one of Kernel Tuner's fastest, at its time.
assert abs(mine[0]["time"] - best["time_s"] * 1e3) <= 1e-9 * kt_best, (mine[0]["time"], best["time_s"])
assert mine[0]["time"] == kt_best, f"Kernel Tuner's fastest is {kt_best} ms, hetune's best {mine[0]['time']} ms"
got = want
print(f"Kernel Tuner {kernel_tuner.__version__ if hasattr(kernel_tuner, '__version__') else ''} replayed "
      f"{len(valid)} configs; fastest {kt_best:.6g} ms, hetune's best {got}")
