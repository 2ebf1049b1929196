/* hetune: tune, predict, dispatch and co-execute compute kernels on CPUs and GPUs. */
#ifndef HETUNE_H
#define HETUNE_H
#include "hetune/core.h"
#include "hetune/options.h"
#include "hetune/expr.h"
#include "hetune/space.h"
#include "hetune/device.h"
#include "hetune/result.h"
#include "hetune/store.h"
#include "hetune/spec.h"
#include "hetune/kernel.h"
#include "hetune/exec.h"
#include "hetune/measure.h"
#include "hetune/tune.h"
#include "hetune/model.h"
#include "hetune/ptx.h"
#include "hetune/gemm.h"
#include "hetune/replay.h"
#include "hetune/dispatch.h"
#include "hetune/coexec.h"
#endif
