/* A C plugin whose tables are wrong in exactly one way, picked by WEFT_BAD_TABLE at build time:
 * the engine must refuse each one with an error, never crash or read past an array. */
#include <stddef.h>

#include "weft/c/weft_plugin.h"

static const int32_t kFloat[] = {WEFT_DT_FLOAT};
#if WEFT_BAD_TABLE == 1 /* an input descriptor that predates every ABI level */
static const WeftIoDesc kX = {0, "x", WEFT_IO_REQUIRED, NULL, kFloat, 1, -1};
#elif WEFT_BAD_TABLE == 2 /* an allowed-types list with a count and no array */
static const WeftIoDesc kX = {sizeof(WeftIoDesc), "x", WEFT_IO_REQUIRED, NULL, NULL, 3, -1};
#elif WEFT_BAD_TABLE == 3 /* an unknown IO kind */
static const WeftIoDesc kX = {sizeof(WeftIoDesc), "x", 7, NULL, kFloat, 1, -1};
#else
static const WeftIoDesc kX = {sizeof(WeftIoDesc), "x", WEFT_IO_REQUIRED, NULL, kFloat, 1, -1};
#endif
static const WeftIoDesc kY = {sizeof(WeftIoDesc), "y", WEFT_IO_REQUIRED, NULL, kFloat, 1, 0};
static const WeftIoDesc* const kInputs[] = {&kX};
static const WeftIoDesc* const kOutputs[] = {&kY};
#if WEFT_BAD_TABLE == 4 /* a list default with elements and no array */
static const WeftAttrValue kDefault = {sizeof(WeftAttrValue), WEFT_ATTR_LIST_INT, 0, 0.0f, 0, NULL, 1000000, NULL};
static const WeftAttrDesc kAttr = {sizeof(WeftAttrDesc), "sizes", WEFT_ATTR_LIST_INT, 0, &kDefault};
#elif WEFT_BAD_TABLE == 8 /* a tensor default whose data is shorter than its shape */
static const float kTwo[] = {1.0f, 2.0f};
static const WeftTensor kTensor = {sizeof(WeftTensor), WEFT_DT_FLOAT, 0, 0, {2, {2, 3}}, (void*)kTwo, sizeof kTwo};
static const WeftAttrValue kDefault = {sizeof(WeftAttrValue), WEFT_ATTR_TENSOR, 0, 0.0f, 0, NULL, 0, NULL, NULL, NULL, NULL, &kTensor};
static const WeftAttrDesc kAttr = {sizeof(WeftAttrDesc), "table", WEFT_ATTR_TENSOR, 0, &kDefault};
#else
static const WeftAttrValue kDefault = {sizeof(WeftAttrValue), WEFT_ATTR_FLOAT, 0, 2.0f};
static const WeftAttrDesc kAttr = {sizeof(WeftAttrDesc), "factor", WEFT_ATTR_FLOAT, 0, &kDefault};
#endif
static const WeftAttrDesc* const kAttrs[] = {&kAttr};
#if WEFT_BAD_TABLE == 5 /* 2^31 inputs over a one-entry array */
static const WeftOpPrototype kProto = {sizeof(WeftOpPrototype), "BadTable", 1, 0x80000000u, kInputs, 1, kOutputs, 1, kAttrs, 0, NULL};
#elif WEFT_BAD_TABLE == 6 /* attributes counted, array missing */
static const WeftOpPrototype kProto = {sizeof(WeftOpPrototype), "BadTable", 1, 1, kInputs, 1, kOutputs, 2, NULL, 0, NULL};
#else
static const WeftOpPrototype kProto = {sizeof(WeftOpPrototype), "BadTable", 1, 1, kInputs, 1, kOutputs, 1, kAttrs, 0, NULL};
#endif

static int dummy_instance;
static void* Create(WeftKernelContext* ctx) { (void)ctx; return &dummy_instance; }
static void Destroy(void* p) { (void)p; }
static WeftStatus Execute(void* self, WeftKernelContext* ctx) { (void)self; (void)ctx; return WEFT_STATUS_FAILED; }

static const WeftOpImpl kImpl = {sizeof(WeftOpImpl), "BadTable", WEFT_CAP_EAGER_EXECUTE, Create, Destroy, Execute,
                                 NULL, NULL, NULL, NULL, NULL, NULL, NULL};
static const WeftOpPrototype* const kProtos[] = {&kProto};
static const WeftOpImpl* const kImpls[] = {&kImpl};
#if WEFT_BAD_TABLE == 7 /* three prototypes counted, array missing */
static const WeftOpLibrary kLibrary = {sizeof(WeftOpLibrary), WEFT_ABI_VERSION, 3, NULL, 1, kImpls, NULL};
#else
static const WeftOpLibrary kLibrary = {sizeof(WeftOpLibrary), WEFT_ABI_VERSION, 1, kProtos, 1, kImpls, NULL};
#endif

WEFT_PLUGIN_EXPORT const WeftOpLibrary* WeftGetOpLibrary(uint32_t engine_abi_version) {
  (void)engine_abi_version;
  return &kLibrary;
}
