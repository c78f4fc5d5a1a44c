/* A plugin written in plain C against the frozen level-1 ABI header: CScale, y = x * factor.
 * It shows the ABI needs no C++ and that level-1 libraries load into the current engine. */
#include <string.h>

#include "weft/c/weft_plugin.h"

static const int32_t kFloat[] = {WEFT_DT_FLOAT};
static const WeftIoDesc kX = {sizeof(WeftIoDesc), "x", WEFT_IO_REQUIRED, NULL, kFloat, 1, -1};
static const WeftIoDesc kY = {sizeof(WeftIoDesc), "y", WEFT_IO_REQUIRED, NULL, kFloat, 1, 0};
static const WeftIoDesc* const kInputs[] = {&kX};
static const WeftIoDesc* const kOutputs[] = {&kY};
static const WeftAttrValue kFactorDefault = {sizeof(WeftAttrValue), WEFT_ATTR_FLOAT, 0, 2.0f};
static const WeftAttrDesc kFactor = {sizeof(WeftAttrDesc), "factor", WEFT_ATTR_FLOAT, 0, &kFactorDefault};
static const WeftAttrDesc* const kAttrs[] = {&kFactor};
static const WeftOpPrototype kProto = {sizeof(WeftOpPrototype), "CScale", 1, 1, kInputs, 1, kOutputs, 1, kAttrs, 0, NULL};

static int dummy_instance;
static void* Create(WeftKernelContext* ctx) { (void)ctx; return &dummy_instance; }
static void Destroy(void* p) { (void)p; }

static WeftStatus Execute(void* self, WeftKernelContext* ctx) {
  (void)self;
  const WeftTensor* x = ctx->inputs[0];
  WeftTensor* y = ctx->api->malloc_output(ctx, 0, &x->shape, WEFT_DT_FLOAT, WEFT_FORMAT_ND);
  if (!y) return WEFT_STATUS_FAILED;
  if (ctx->num_attrs != 1 || ctx->attrs[0]->type != WEFT_ATTR_FLOAT) {
    ctx->api->set_error(ctx, "factor attribute missing");
    return WEFT_STATUS_FAILED;
  }
  float f = ctx->attrs[0]->f;
  int64_t n = 1;
  for (int64_t k = 0; k < x->shape.ndim; ++k) n *= x->shape.dims[k];
  const float* px = (const float*)x->data;
  float* py = (float*)y->data;
  for (int64_t i = 0; i < n; ++i) py[i] = px[i] * f;
  return WEFT_STATUS_OK;
}

static const WeftOpImpl kImpl = {sizeof(WeftOpImpl), "CScale", WEFT_CAP_EAGER_EXECUTE, Create, Destroy, Execute,
                                 NULL, NULL, NULL, NULL, NULL, NULL, NULL};
static const WeftOpPrototype* const kProtos[] = {&kProto};
static const WeftOpImpl* const kImpls[] = {&kImpl};

#ifdef WEFT_TEST_FUTURE_ABI
#define LIB_ABI 99u
#else
#define LIB_ABI WEFT_ABI_VERSION
#endif

static const WeftOpLibrary kLibrary = {sizeof(WeftOpLibrary), LIB_ABI, 1, kProtos, 1, kImpls, NULL};

WEFT_PLUGIN_EXPORT const WeftOpLibrary* WeftGetOpLibrary(uint32_t engine_abi_version) {
  (void)engine_abi_version;
  return &kLibrary;
}
