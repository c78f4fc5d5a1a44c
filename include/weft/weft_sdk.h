// Everything an operator author needs: types, REG_OP, capability interfaces and contexts.
#ifndef WEFT_WEFT_SDK_H_
#define WEFT_WEFT_SDK_H_

#include "weft/attr_value.h"
#include "weft/custom_op.h"
#include "weft/op_def.h"
#include "weft/runtime_attrs.h"
#include "weft/types.h"

#endif  // WEFT_WEFT_SDK_H_
