#!/bin/sh
# The README's demo: build, list devices, tune the OpenCL GEMM example on PoCL, show the result.
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHETUNE_TESTS=OFF > /dev/null
cmake --build build -j"$(nproc)"
./build/hetune devices
./build/hetune tune examples/gemm/gemm_opencl.json --budget "${HETUNE_DEMO_BUDGET:-40}"
./build/hetune best examples/gemm/gemm_opencl.json
