"""Writes the onnx package's backend node test cases (model.onnx and test_data_set_*/{input,
output}_*.pb per test, as the ONNX test suite lays them out) into a directory:

    python tests/onnx/write_node_tests.py OUT_DIR
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")  # some cases divide by zero on purpose

import numpy as np  # noqa: E402
from onnx import TensorProto, numpy_helper  # noqa: E402
from onnx.backend.test.case import node  # noqa: E402


def proto(value, info):
    t = info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, info.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, info.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, info.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, info.name)


def main(out):
    np.random.seed(0)  # the cases draw their inputs from NumPy's global generator: the same data every time
    count = 0
    for case in node.collect_testcases(None):
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds, exist_ok=True)
            for kind, values, infos in (("input", inputs, case.model.graph.input), ("output", outputs, case.model.graph.output)):
                for j, v in enumerate(values):
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(proto(v, infos[j]).SerializeToString())
        count += 1
    print(f"{count} node tests written to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
