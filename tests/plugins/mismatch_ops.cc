// REG_OP type and REG_AUTO_MAPPING_OP class differ, and a namespace-qualified class.
#include "weft/custom_op.h"

using namespace weft;  // NOLINT

REG_OP(MyAdd)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OP_END_FACTORY_REG(MyAdd);
class MyAddImpl : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext*) override { return GRAPH_SUCCESS; }
};
REG_AUTO_MAPPING_OP(MyAddImpl);

REG_OP(Scaled)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OP_END_FACTORY_REG(Scaled);
namespace mine {
class Scaled : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext*) override { return GRAPH_SUCCESS; }
};
}  // namespace mine
REG_AUTO_MAPPING_OP(mine::Scaled);
