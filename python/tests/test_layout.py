"""The ctypes structs must match the C headers byte for byte: a C program compiled against
include/hetune prints every struct's size and each field's offset, compared with ctypes'."""
import ctypes
import os
import shutil
import subprocess

import pytest

from hetune import _lib

# ctypes struct -> C type name
STRUCTS = {
    _lib.Value: "ht_value", _lib.Config: "ht_config", _lib.Result: "ht_result", _lib.DeviceInfo: "ht_device_info",
    _lib.RunnerOptions: "ht_runner_options", _lib.TuneProgress: "ht_tune_progress",
    _lib.TuneOptions: "ht_tune_options", _lib.TuneSummary: "ht_tune_summary", _lib.EvalFilter: "ht_eval_filter",
    _lib.EvalRecord: "ht_eval_record", _lib.SessionRecord: "ht_session_record",
    _lib.ModelRecord: "ht_model_record", _lib.Buf: "ht_buf", _lib.BandwidthCurve: "ht_bandwidth_curve",
    _lib.Dataset: "ht_dataset", _lib.Band: "ht_band", _lib.ReplayOptions: "ht_replay_options",
    _lib.ReplayStep: "ht_replay_step", _lib.ReplayTrace: "ht_replay_trace",
    _lib.RecordedStats: "ht_recorded_stats", _lib.Decision: "ht_decision", _lib.HostArg: "ht_host_arg",
    _lib.RunTimes: "ht_run_times",
}


def c_layout(tmp_path, include_dir):
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "hetune/hetune.h"', 'int main(void) {']
    for py, c in STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (c, c))
        for name, _ in py._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (c, name, c, name))
    lines += ["return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-I", str(include_dir), str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return dict(line.rsplit(" ", 1) for line in out.splitlines())


def test_structs_match_the_headers(tmp_path, source_dir):
    if not shutil.which(os.environ.get("CC", "cc")):
        pytest.skip("no C compiler to read the headers' layout")
    c = c_layout(tmp_path, source_dir / "include")
    wrong = []
    for py, name in STRUCTS.items():
        if int(c[name]) != ctypes.sizeof(py):
            wrong.append("sizeof(%s): C %s, ctypes %d" % (name, c[name], ctypes.sizeof(py)))
        for field, _ in py._fields_:
            off = getattr(py, field).offset
            if int(c["%s.%s" % (name, field)]) != off:
                wrong.append("%s.%s: C offset %s, ctypes %d" % (name, field, c["%s.%s" % (name, field)], off))
    assert not wrong, "\n".join(wrong)
