/*
 * Weft plugin ABI, level 1.
 *
 * The only contract between the Weft engine and an operator library. Plain C, so a plugin built
 * by any compiler or standard library loads into any engine of the same or a newer ABI level.
 *
 * Rules that keep it stable:
 *  - Every struct that may grow starts with `uint32_t struct_size`. Fields are only ever appended;
 *    a reader checks struct_size before touching a field newer than the level it was built for.
 *  - Functions return WEFT_STATUS_OK (0) or a failure; the message travels through
 *    WeftHostApi::set_error, never as a C++ exception.
 *  - Memory handed across the boundary is owned by whoever allocated it: the engine owns tensors,
 *    contexts and workspace; a library owns its prototypes and implementation tables for as long
 *    as it stays loaded.
 *
 * A library exports one symbol, WEFT_OP_LIBRARY_SYMBOL, of type WeftGetOpLibraryFn. The engine
 * calls it after dlopen and pulls the prototypes and implementations it lists.
 */
#ifndef WEFT_C_WEFT_PLUGIN_H_
#define WEFT_C_WEFT_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_ABI_VERSION 1u
#define WEFT_MAX_DIMS 8
#define WEFT_OP_LIBRARY_SYMBOL "WeftGetOpLibrary"

#if defined(_WIN32)
#define WEFT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define WEFT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

typedef int32_t WeftStatus;
#define WEFT_STATUS_OK 0
#define WEFT_STATUS_FAILED 1

/* Element types. Values follow GE's ge::DataType so ported code keeps its numbers. */
typedef enum WeftDataType {
  WEFT_DT_FLOAT = 0,
  WEFT_DT_FLOAT16 = 1,
  WEFT_DT_INT8 = 2,
  WEFT_DT_INT32 = 3,
  WEFT_DT_UINT8 = 4,
  WEFT_DT_INT16 = 6,
  WEFT_DT_UINT16 = 7,
  WEFT_DT_UINT32 = 8,
  WEFT_DT_INT64 = 9,
  WEFT_DT_UINT64 = 10,
  WEFT_DT_DOUBLE = 11,
  WEFT_DT_BOOL = 12,
  WEFT_DT_BF16 = 27,
  WEFT_DT_UNDEFINED = 28
} WeftDataType;

/* ONNX sequence and optional values (weft/sequence.h holds their byte layout). A sequence of
   tensors of element type E has type WEFT_DT_SEQUENCE_BASE + E; an optional holding a value of
   type V (a tensor type or a sequence type) has WEFT_DT_OPTIONAL_BASE + V. Such a value is a 1-D
   tensor of its encoded bytes; ops that do not list these types never receive one. */
#define WEFT_DT_SEQUENCE_BASE 64
#define WEFT_DT_OPTIONAL_BASE 128

typedef enum WeftFormat {
  WEFT_FORMAT_NCHW = 0,
  WEFT_FORMAT_NHWC = 1,  /* as a planned layout: a 4-D [N, C, H, W] value stored as [N, H, W, C] */
  WEFT_FORMAT_ND = 2,
  WEFT_FORMAT_NC1HWC0 = 3 /* [N, C/16, H, W, 16], channels padded to a multiple of 16 */
} WeftFormat;

typedef enum WeftPlacement { WEFT_PLACEMENT_HOST = 0, WEFT_PLACEMENT_CUDA = 1 } WeftPlacement;

/* A shape. Fixed layout, never grows. A dim of -1 means "unknown until run time". */
typedef struct WeftShape {
  int64_t ndim;
  int64_t dims[WEFT_MAX_DIMS];
} WeftShape;

/* A tensor as seen by an operator. Always allocated by the engine. During shape/type inference
 * and compilation `data` is NULL unless the value is a constant known at compile time. */
typedef struct WeftTensor {
  uint32_t struct_size;
  int32_t dtype;     /* WeftDataType */
  int32_t format;    /* WeftFormat */
  int32_t placement; /* WeftPlacement */
  WeftShape shape;
  void* data;
  uint64_t size_bytes; /* bytes addressable at data (capacity for outputs) */
} WeftTensor;

typedef enum WeftAttrType {
  WEFT_ATTR_INT = 1,
  WEFT_ATTR_FLOAT = 2,
  WEFT_ATTR_BOOL = 3,
  WEFT_ATTR_STRING = 4,
  WEFT_ATTR_LIST_INT = 5,
  WEFT_ATTR_LIST_FLOAT = 6,
  WEFT_ATTR_LIST_STRING = 7,
  WEFT_ATTR_TENSOR = 8,
  WEFT_ATTR_LIST_BOOL = 9,
  WEFT_ATTR_TYPE = 10 /* a WeftDataType stored in `i` */
} WeftAttrType;

/* One attribute value. Only the fields of its `type` are meaningful. Lists use `count`. */
typedef struct WeftAttrValue {
  uint32_t struct_size;
  int32_t type; /* WeftAttrType */
  int64_t i;
  float f;
  uint8_t b;
  const char* s;
  uint64_t count;
  const int64_t* ints;
  const float* floats;
  const char* const* strings;
  const uint8_t* bools;
  const WeftTensor* tensor;
} WeftAttrValue;

typedef enum WeftIoKind { WEFT_IO_REQUIRED = 0, WEFT_IO_OPTIONAL = 1, WEFT_IO_DYNAMIC = 2 } WeftIoKind;

/* One declared input or output of a prototype. Allowed types are either a list (`dtypes`) or a
 * symbol (`dtype_symbol`) declared with DATATYPE; all IOs sharing a symbol share one type. */
typedef struct WeftIoDesc {
  uint32_t struct_size;
  const char* name;
  int32_t kind; /* WeftIoKind */
  const char* dtype_symbol;
  const int32_t* dtypes;
  uint32_t num_dtypes;
  int32_t same_as_input; /* outputs only: IR index of the input whose shape and type it copies, or -1 */
} WeftIoDesc;

typedef struct WeftDtypeSymbol {
  uint32_t struct_size;
  const char* name;
  const int32_t* dtypes;
  uint32_t num_dtypes;
} WeftDtypeSymbol;

typedef struct WeftAttrDesc {
  uint32_t struct_size;
  const char* name;
  int32_t type; /* WeftAttrType */
  int32_t required;
  const WeftAttrValue* default_value; /* NULL when required */
} WeftAttrDesc;

/* The REG_OP prototype of one operator type. */
typedef struct WeftOpPrototype {
  uint32_t struct_size;
  const char* op_type;
  uint32_t version;
  uint32_t num_inputs;
  const WeftIoDesc* const* inputs;
  uint32_t num_outputs;
  const WeftIoDesc* const* outputs;
  uint32_t num_attrs;
  const WeftAttrDesc* const* attrs;
  uint32_t num_dtype_symbols;
  const WeftDtypeSymbol* const* dtype_symbols;
} WeftOpPrototype;

typedef enum WeftStage {
  WEFT_STAGE_CREATE = 0,
  WEFT_STAGE_INFER_DTYPE = 1,
  WEFT_STAGE_INFER_SHAPE = 2,
  WEFT_STAGE_COMPILE = 3,
  WEFT_STAGE_EXECUTE = 4,
  WEFT_STAGE_UPDATE_ARGS = 5,
  WEFT_STAGE_SERIALIZE = 6,
  WEFT_STAGE_DESERIALIZE = 7,
  WEFT_STAGE_QUERY = 8, /* query_fusion / query_layout: metadata as inference left it */
  WEFT_STAGE_EMIT = 9   /* emit (WEFT_CAP_EMITTABLE): writing the op's C for `weft aot`; appended */
} WeftStage;

/* Parts of a generated C module that an op's emit callback writes to (WeftHostApi::emit_code).
 * The generated module is one translation unit per model; see docs/aot.md. */
typedef enum WeftEmitPart {
  WEFT_EMIT_INCLUDE = 0, /* a header to #include, e.g. "<string.h>"; once per module */
  WEFT_EMIT_HELPER = 1,  /* file-scope C (static functions, tables) under `key`; once per module */
  WEFT_EMIT_STATE = 2,   /* member declarations of the node's persistent state struct; with a `key`, of a
                          * state struct shared by every node that declares that key (same text) */
  WEFT_EMIT_INIT = 3,    /* statements of the node's init function (body sees `ctx`) */
  WEFT_EMIT_RUN = 4      /* statements of the node's run function (body sees `ctx`) */
} WeftEmitPart;

/* Names and expressions the module offers an emitting op (WeftHostApi::emit_name). */
typedef enum WeftEmitName {
  WEFT_EMIT_NAME_INPUT = 0,  /* input instance `index`: a C expression of type void* (const void* for a constant) */
  WEFT_EMIT_NAME_OUTPUT = 1, /* output instance `index`: a C expression of type void* */
  WEFT_EMIT_NAME_STATE = 2,  /* a pointer to the node's state struct (after WEFT_EMIT_STATE) */
  WEFT_EMIT_NAME_PREFIX = 3, /* the module's prefix, e.g. "kws" */
  WEFT_EMIT_NAME_NODE = 4    /* a C identifier unique to this node in the module, e.g. "kws_n3" */
} WeftEmitName;

typedef struct WeftKernelContext WeftKernelContext;

typedef void (*WeftParallelFn)(void* user, int64_t begin, int64_t end);

/* Source for WeftHostApi::rtc_compile. */
typedef struct WeftRtcSource {
  uint32_t struct_size;
  const char* language; /* "c" or "c++" */
  const char* source;
  const char* options;  /* extra compiler options, space-separated, or NULL */
  const char* tag;      /* a label for the kernel in messages and cache listings, or NULL */
} WeftRtcSource;

/* Services the engine offers to operator code, reached through WeftKernelContext::api. */
typedef struct WeftHostApi {
  uint32_t struct_size;
  uint32_t abi_version;
  /* Records a failure message for the current callback; the engine adds op type and node. A
   * later call replaces it; an empty message withdraws it. */
  void (*set_error)(WeftKernelContext* ctx, const char* message);
  /* Execute only: gives output `index` the shape and type and returns it with `data` set, or NULL
   * (after recording an error) when it does not fit what compilation planned. */
  WeftTensor* (*malloc_output)(WeftKernelContext* ctx, uint32_t index, const WeftShape* shape,
                               int32_t dtype, int32_t format);
  /* Execute/Compile: scratch memory valid until the callback returns, 64-byte aligned. */
  void* (*malloc_workspace)(WeftKernelContext* ctx, uint64_t bytes);
  /* Serialize only: appends bytes to the op's blob stored under `key` ("" is the default key). */
  WeftStatus (*write_blob)(WeftKernelContext* ctx, const char* key, const void* data, uint64_t size);
  /* A compile/session option by key, or NULL. */
  const char* (*get_option)(WeftKernelContext* ctx, const char* key);
  /* Runs fn over [0, n) in chunks of at least `grain` on the engine's intra-op threads. */
  WeftStatus (*parallel_for)(WeftKernelContext* ctx, int64_t n, int64_t grain, WeftParallelFn fn,
                             void* user);
  /* Compile only: output `index` will be stored in `format` and needs `bytes` (at least its
   * plain size). Every consumer must understand that format; the engine plans the buffer. */
  WeftStatus (*set_output_storage)(WeftKernelContext* ctx, uint32_t index, uint64_t bytes, int32_t format);

  /* ---- appended after the first level-1 release; check struct_size before use ---- */
  /* Serialize/Deserialize: the blob stored under `key` ("" = default), or NULL (size 0) if none. */
  const uint8_t* (*read_blob)(WeftKernelContext* ctx, const char* key, uint64_t* size);
  /* InferShape: output `index` has -1 dims whose extent depends on input values; `bound` is the
   * largest shape it can take (same rank, no -1). Execute gets a buffer sized for the bound. */
  WeftStatus (*set_output_bound)(WeftKernelContext* ctx, uint32_t index, const WeftShape* bound);
  /* Execute: the real shape of a bounded output (the direct setter). Checked against the bound. */
  WeftStatus (*set_output_shape)(WeftKernelContext* ctx, uint32_t index, const WeftShape* shape);
  /* Execute: registers a shape buffer for output `index`: uint64 [ndim, d0, d1, ...] that the
   * kernel fills. The engine reads it after Execute returns and the stream is synchronized. */
  WeftStatus (*set_output_shape_buffer)(WeftKernelContext* ctx, uint32_t index, const uint64_t* buffer);
  /* Compile: turns C or C++ source into native code with the system compiler (through the
   * engine's kernel cache) and returns the address of `symbol`, or NULL after recording an error
   * that carries the compiler's diagnostics. Writes the kernel's id (at most 64 characters) to
   * `kernel_id`; the id finds the kernel again with rtc_lookup, also in a loaded model file. */
  void* (*rtc_compile)(WeftKernelContext* ctx, const WeftRtcSource* src, char* kernel_id,
                       uint32_t kernel_id_size);
  /* Compile/Deserialize/Execute: the address of `symbol` in a kernel this node compiled or that
   * the model file stored for it, or NULL. */
  void* (*rtc_lookup)(WeftKernelContext* ctx, const char* kernel_id, const char* symbol);
  /* UpdateHostArgs/Execute: `bytes` of memory owned by this node in this run context, kept
   * between runs and zeroed when first handed out. NULL if `bytes` changes between calls. */
  void* (*host_args)(WeftKernelContext* ctx, uint64_t bytes);
  /* Any stage after fusion (Compile, Deserialize, Serialize, UpdateHostArgs, Execute): the
   * activation the engine fused into this node's output 0 (see WeftFusionSupport); never NULL,
   * `activation` is WEFT_ACT_NONE when nothing was fused. */
  const struct WeftEpilogue* (*get_epilogue)(WeftKernelContext* ctx);

  /* ---- appended for the AOT C generator: stage WEFT_STAGE_EMIT only ---- */
  /* Adds `text` to part `part` (WeftEmitPart) of the generated module. For WEFT_EMIT_INCLUDE and
   * WEFT_EMIT_HELPER, `key` names the text module-wide: a key already emitted (by any node) adds
   * nothing, and the same key with different text is an error. WEFT_EMIT_STATE with a key works
   * the same way for state several nodes share; NULL or "" keeps the state the node's own. */
  WeftStatus (*emit_code)(WeftKernelContext* ctx, int32_t part, const char* key, const char* text);
  /* Writes name `what` (WeftEmitName) for `index` to buf, NUL-terminated; fails if it does not fit. */
  WeftStatus (*emit_name)(WeftKernelContext* ctx, int32_t what, uint32_t index, char* buf, uint32_t size);
  /* Defines a read-only array of `count` elements of `dtype` (WeftDataType) holding `data`; writes
   * its name to buf. `hint` (may be NULL) becomes part of the name. */
  WeftStatus (*emit_const)(WeftKernelContext* ctx, const char* hint, int32_t dtype, const void* data, uint64_t count,
                           char* buf, uint32_t size);
  /* Reserves `bytes` of the module's arena, 16-byte aligned, for this node while its run function
   * runs (the planner places it); writes a C expression of type uint8_t* to buf. */
  WeftStatus (*emit_scratch)(WeftKernelContext* ctx, uint64_t bytes, char* buf, uint32_t size);
} WeftHostApi;


/* True when `api` (built by an engine of any level-1 release) has the member `field`. */
#define WEFT_HOST_API_HAS(api, field) \
  ((api)->struct_size >= offsetof(WeftHostApi, field) + sizeof(((WeftHostApi*)0)->field))

/* Everything a callback sees. Inputs and outputs are flattened instance lists: IR input `k`
 * occupies [ir_input_start[k], ir_input_start[k] + ir_input_count[k]). An absent optional input
 * has count 0. */
struct WeftKernelContext {
  uint32_t struct_size;
  int32_t stage; /* WeftStage */
  const WeftHostApi* api;
  void* engine; /* opaque to plugins */
  const char* op_type;
  const char* node_name;
  uint32_t num_inputs;
  WeftTensor* const* inputs;
  uint32_t num_outputs;
  WeftTensor* const* outputs;
  uint32_t num_ir_inputs;
  const uint32_t* ir_input_start;
  const uint32_t* ir_input_count;
  uint32_t num_ir_outputs;
  const uint32_t* ir_output_start;
  const uint32_t* ir_output_count;
  uint32_t num_attrs; /* in prototype order, defaults filled in */
  const WeftAttrValue* const* attrs;
  const char* const* attr_names;
  void* stream; /* NULL for the CPU in-order queue, a cudaStream_t on CUDA */
};

typedef WeftStatus (*WeftOpFn)(void* instance, WeftKernelContext* ctx);

#define WEFT_CAP_EAGER_EXECUTE (1ull << 0)
#define WEFT_CAP_SHAPE_INFER (1ull << 1)
#define WEFT_CAP_COMPILABLE (1ull << 2)
#define WEFT_CAP_PORTABLE (1ull << 3)
#define WEFT_CAP_ARGS_UPDATER (1ull << 4)
#define WEFT_CAP_EMITTABLE (1ull << 5) /* emit is set: the op writes its own C (weft aot) */
#define WEFT_CAP_FUSIBLE (1ull << 6)   /* query_fusion is set */
#define WEFT_CAP_LAYOUT (1ull << 7)    /* query_layout is set */

/* Activations the engine can fuse into a producer's output. Semantics are ONNX's:
 * RELU max(x,0); CLIP min(max(x,alpha),beta); LEAKY_RELU x<0 ? alpha*x : x; SIGMOID; TANH;
 * HARD_SIGMOID max(0,min(1,alpha*x+beta)); ELU x<0 ? alpha*(exp(x)-1) : x;
 * HARD_SWISH x*max(0,min(1,x/6+1/2)); SWISH x*sigmoid(x); GELU x/2*(1+erf(x/sqrt(2)));
 * GELU_TANH x/2*(1+tanh(sqrt(2/pi)*(x+0.044715x^3))). */
typedef enum WeftActivation {
  WEFT_ACT_NONE = 0,
  WEFT_ACT_RELU = 1,
  WEFT_ACT_CLIP = 2,
  WEFT_ACT_LEAKY_RELU = 3,
  WEFT_ACT_SIGMOID = 4,
  WEFT_ACT_TANH = 5,
  WEFT_ACT_HARD_SIGMOID = 6,
  WEFT_ACT_ELU = 7,
  WEFT_ACT_HARD_SWISH = 8,
  WEFT_ACT_SWISH = 9,     /* x * sigmoid(x) (SiLU); appended */
  WEFT_ACT_GELU = 10,     /* ONNX Gelu; appended */
  WEFT_ACT_GELU_TANH = 11 /* ONNX Gelu with approximate="tanh"; appended */
} WeftActivation;
#define WEFT_ACT_COUNT 12
#define WEFT_ACT_BIT(a) (1ull << (a))

/* The activation fused into a node (WeftHostApi::get_epilogue). */
typedef struct WeftEpilogue {
  uint32_t struct_size;
  int32_t activation; /* WeftActivation */
  float alpha, beta;  /* its parameters, as in the comment on WeftActivation */
} WeftEpilogue;

/* What one node can take part in, filled by query_fusion (the engine sets the defaults first:
 * nothing absorbed, no sum or bias input, not an activation). The engine fuses only from what
 * these say, for built-in and plugin ops alike:
 *  - a producer P whose output 0 has one consumer A that reports itself as an activation, and
 *    whose `absorbs` has A's bit, computes A itself; A disappears;
 *  - a producer P with `sum_input` s (an optional IR input it declares, absent on this node)
 *    followed by Add(P's output, T) where T has the output's shape and exists before P runs:
 *    T becomes P's input s and P must compute  out = P(...) + T  before its activation;
 *  - `bias_input` b likewise for Add(P's output, C) with C a constant of N elements along the
 *    last dimension: out[..., n] = P(...)[..., n] + C[n], before the activation.
 *  - Swish: a producer P whose output 0 is read by exactly two nodes, S reporting itself as the
 *    activation Sigmoid of it and M with `is_mul` multiplying it by S's output (S's only reader),
 *    and whose `absorbs` has WEFT_ACT_SWISH, computes x * sigmoid(x) itself; S and M disappear.
 * The Add, the Mul and the activation are recognised by what they declare (`is_add`, `is_mul`,
 * `activation`), not by their op type. */
typedef struct WeftFusionSupport {
  uint32_t struct_size;
  uint64_t absorbs;   /* WEFT_ACT_BIT(...) of the activations this node can apply to output 0 */
  int32_t sum_input;  /* IR input receiving a residual addend, or -1 */
  int32_t bias_input; /* IR input receiving a bias addend, or -1 */
  int32_t activation; /* WeftActivation this node computes on its input 0, or WEFT_ACT_NONE */
  float alpha, beta;  /* its parameters (values known at compile time) */
  int32_t is_add;     /* non-zero: this node computes input 0 + input 1, broadcasting as ONNX Add */
  /* Appended: read and written only when struct_size covers it. */
  int32_t is_mul;     /* non-zero: this node computes input 0 * input 1, broadcasting as ONNX Mul */
} WeftFusionSupport;

/* Which tensors of one node may be exchanged in a blocked layout, filled by query_layout (the
 * engine sets `format` to WEFT_FORMAT_ND first: none). The engine stores a value in `format`
 * only when its producer lists the output and every consumer lists the input it is read as; the
 * decision reaches the op as the tensors' `format` at Compile, Deserialize and Execute, and the
 * producer's Compile gives the storage size with set_output_storage. */
typedef struct WeftLayoutSupport {
  uint32_t struct_size;
  int32_t format;   /* the storage WeftFormat: WEFT_FORMAT_NC1HWC0 or WEFT_FORMAT_NHWC */
  uint64_t inputs;  /* bit k: IR input k can be read in `format` */
  uint64_t outputs; /* bit k: IR output k can be written in `format` */
  uint32_t flags;   /* WEFT_LAYOUT_* */
} WeftLayoutSupport;
/* The listed inputs and outputs are all in `format` or all plain (e.g. a pooling that keeps the
 * layout it reads). */
#define WEFT_LAYOUT_TOGETHER 1u
/* The op runs the listed tensors in `format` correctly but slower than plain (e.g. its fast kernel
 * for this node's configuration, on this CPU, takes another layout): the layout pass does not
 * choose it, while a model file that stores them so (compiled where it was fast) still loads. */
#define WEFT_LAYOUT_SLOW 2u
/* The listed inputs and outputs may take whichever planned layout the values around them settle
 * on (NC1HWC0 or NHWC), all the same one: an elementwise op whose result does not depend on how
 * its operands are laid out, as long as they share the layout. `format` WEFT_FORMAT_ND: any; a
 * planned format: that one only (an op whose result would not keep channel-blocked padding zero
 * names WEFT_FORMAT_NHWC). The layout pass ties the listed values together and stores them in a
 * layout only when every other op at their ends (a producer, a reader) declares that one layout
 * and every op of the group takes it; an op with this flag handles every layout it takes, with
 * channel-blocked padding elements computed like the rest. */
#define WEFT_LAYOUT_ANY 4u

/* The REG_AUTO_MAPPING_OP side: how to make and drive one implementation class. Function
 * pointers for capabilities the class lacks are NULL. */
typedef struct WeftOpImpl {
  uint32_t struct_size;
  const char* class_name;
  uint64_t capabilities;
  void* (*create)(WeftKernelContext* ctx); /* NULL result = failure, message via set_error */
  void (*destroy)(void* instance);
  WeftOpFn execute;
  WeftOpFn infer_shape;
  WeftOpFn infer_dtype;
  WeftOpFn compile;
  WeftOpFn update_host_args;
  WeftOpFn serialize;
  WeftStatus (*deserialize)(void* instance, WeftKernelContext* ctx, const uint8_t* data,
                            uint64_t size);
  WeftOpFn emit; /* WEFT_CAP_EMITTABLE: writes the node's C through WeftHostApi::emit_* (stage WEFT_STAGE_EMIT) */

  /* ---- appended after the first level-1 release; the engine checks struct_size ---- */
  /* WEFT_CAP_FUSIBLE: what this node can fuse (stage WEFT_STAGE_QUERY). */
  WeftStatus (*query_fusion)(void* instance, WeftKernelContext* ctx, WeftFusionSupport* out);
  /* WEFT_CAP_LAYOUT: which of its tensors may be blocked (stage WEFT_STAGE_QUERY). */
  WeftStatus (*query_layout)(void* instance, WeftKernelContext* ctx, WeftLayoutSupport* out);
} WeftOpImpl;

typedef struct WeftOpLibrary {
  uint32_t struct_size;
  uint32_t abi_version; /* the level the library was built against */
  uint32_t num_prototypes;
  const WeftOpPrototype* const* prototypes;
  uint32_t num_impls;
  const WeftOpImpl* const* impls;
  const char* error; /* non-NULL when the library's own registration failed */
} WeftOpLibrary;

/* The one exported entry point. `engine_abi_version` is the level of the calling engine. */
typedef const WeftOpLibrary* (*WeftGetOpLibraryFn)(uint32_t engine_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_C_WEFT_PLUGIN_H_ */
