"""hetune: tune compute kernels (C, OpenCL, CUDA), predict their times and dispatch calls, over
libhetune's C API (docs/python.md).

    import hetune
    with hetune.Store("hetune.db") as store:
        result = hetune.Spec.load("examples/vadd/vadd_c.json").tune(store, device="c", budget=10)
        print(result.best)
        df = result.to_dataframe()
"""
from ._lib import Error
from .dispatch import Computation
from .model import Model, Prediction
from .replay import Recorded, ReplayResult
from .spec import Kernel, Spec
from .store import Store
from .tune import Best, TuneResult, strategies, tune

__version__ = "0.1.0"

__all__ = ["Best", "Computation", "Error", "Kernel", "Model", "Prediction", "Recorded", "ReplayResult", "Spec",
           "Store", "TuneResult", "strategies", "tune", "__version__"]
