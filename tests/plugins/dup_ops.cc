// Declares SumN again: loading it next to test_ops must be a duplicate error.
#include "weft/custom_op.h"

using namespace weft;  // NOLINT

REG_OP(SumN)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OP_END_FACTORY_REG(SumN);
class SumN : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext*) override { return GRAPH_SUCCESS; }
};
REG_AUTO_MAPPING_OP(SumN);
