// libFuzzer target for plugin registration: the bytes describe an operator library's C tables
// (WeftOpLibrary → prototypes, I/O and attribute descriptors, default values, type symbols,
// implementation tables), which go through the registry's checks as a dlopen'ed library's would.
//
// The decoder makes what a malformed library can really hand over: null arrays with non-zero
// counts, counts up to 2^32-1, struct_size from 0 to beyond the struct, unknown enum values,
// missing function pointers, duplicate and mismatched names, strings of any bytes. What no
// check could catch (a wild pointer, an array shorter than its count) is never made: every
// non-null array holds its count and every struct is backed by at least struct_size bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "registry/registry.h"

namespace {

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t U8() { return n_ ? (--n_, *p_++) : 0; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = v << 8 | U8();
    return v;
  }
  uint64_t U64() { return static_cast<uint64_t>(U32()) << 32 | U32(); }
  bool Chance(int in_256) { return U8() < in_256; }

 private:
  const uint8_t* p_;
  size_t n_;
};

// Owns everything one input builds.
class Arena {
 public:
  void* Bytes(size_t n) {
    blocks_.emplace_back(new uint8_t[n ? n : 1]());
    return blocks_.back().get();
  }
  template <typename T>
  T* Array(size_t n) {
    return static_cast<T*>(Bytes(sizeof(T) * n));
  }
  // A struct whose struct_size is chosen by the input; its storage covers the claim.
  template <typename T>
  T* Struct(Reader& in) {
    uint8_t sel = in.U8() % 8;
    size_t claim = sel == 0   ? 0
                   : sel == 1 ? sizeof(T) / 2
                   : sel == 2 ? sizeof(T) - sizeof(void*)
                   : sel < 6  ? sizeof(T)
                              : sizeof(T) + 8 * (in.U8() % 32);
    T* t = static_cast<T*>(Bytes(claim > sizeof(T) ? claim : sizeof(T)));
    t->struct_size = static_cast<uint32_t>(claim);
    return t;
  }
  const char* Str(Reader& in) {
    uint8_t sel = in.U8();
    if (sel < 8) return nullptr;
    static const char* kNames[] = {"Relu", "Conv", "A", "B", "x", "y", "T", "T1", "alpha", "", "Add", "w"};
    if (sel < 160) return kNames[sel % (sizeof kNames / sizeof *kNames)];
    size_t len = in.U8() % 24;
    char* s = static_cast<char*>(Bytes(len + 1));
    for (size_t k = 0; k < len; ++k) s[k] = static_cast<char>(in.U8() | 1);
    return s;
  }

 private:
  std::deque<std::unique_ptr<uint8_t[]>> blocks_;
};

// A count and whether its array exists: mostly small, sometimes huge (then always null).
struct Count {
  uint64_t n;
  bool present;
};
Count PickCount(Reader& in, uint64_t limit = UINT32_MAX) {
  uint8_t sel = in.U8();
  static const uint64_t kHuge[] = {65537, 1u << 20, 1u << 31, 0xffffffffu, 4097, 257};
  if (sel < 16) {
    uint64_t n = kHuge[sel % 6];
    return {n > limit ? limit : n, false};
  }
  return {static_cast<uint64_t>(sel % 5), !in.Chance(20)};
}

int32_t PickDtype(Reader& in) {
  uint8_t sel = in.U8();
  return sel < 230 ? static_cast<int32_t>(sel % 18) : static_cast<int32_t>(in.U32());
}

const int32_t* Dtypes(Reader& in, Arena& a, uint32_t* count) {
  Count c = PickCount(in);
  *count = static_cast<uint32_t>(c.n);
  if (!c.present) return nullptr;
  int32_t* d = a.Array<int32_t>(c.n);
  for (uint64_t k = 0; k < c.n; ++k) d[k] = PickDtype(in);
  return d;
}

const WeftTensor* Tensor(Reader& in, Arena& a) {
  if (in.Chance(40)) return nullptr;
  WeftTensor* t = a.Struct<WeftTensor>(in);
  t->dtype = PickDtype(in);
  t->format = static_cast<int32_t>(in.U8() % 4);
  t->placement = static_cast<int32_t>(in.U8() % 3);
  t->shape.ndim = in.Chance(20) ? static_cast<int64_t>(in.U64()) : in.U8() % 4;
  for (int k = 0; k < WEFT_MAX_DIMS; ++k) t->shape.dims[k] = in.Chance(20) ? static_cast<int64_t>(in.U64()) : in.U8() % 5;
  uint64_t bytes = in.Chance(30) ? in.U64() : in.U8();
  t->size_bytes = bytes;
  t->data = bytes <= 4096 && !in.Chance(20) ? a.Bytes(bytes) : nullptr;
  return t;
}

const WeftAttrValue* AttrValue(Reader& in, Arena& a, int32_t type) {
  if (in.Chance(20)) return nullptr;
  WeftAttrValue* v = a.Struct<WeftAttrValue>(in);
  v->type = in.Chance(30) ? static_cast<int32_t>(in.U8() % 12) : type;
  v->i = static_cast<int64_t>(in.U64());
  uint32_t bits = in.U32();
  std::memcpy(&v->f, &bits, sizeof bits);
  v->b = in.U8();
  v->s = a.Str(in);
  Count c = PickCount(in);
  v->count = c.n;
  if (c.present) {
    int64_t* ints = a.Array<int64_t>(c.n);
    float* floats = a.Array<float>(c.n);
    uint8_t* bools = a.Array<uint8_t>(c.n);
    const char** strings = a.Array<const char*>(c.n);
    for (uint64_t k = 0; k < c.n; ++k) {
      ints[k] = static_cast<int64_t>(in.U32());
      floats[k] = static_cast<float>(in.U8()) / 7.0f;
      bools[k] = in.U8();
      strings[k] = a.Str(in);
    }
    v->ints = ints;
    v->floats = floats;
    v->bools = bools;
    v->strings = strings;
  }
  v->tensor = Tensor(in, a);
  return v;
}

template <typename T, typename Make>
const T* const* Table(Reader& in, Arena& a, uint32_t* count, Make make) {
  Count c = PickCount(in);
  *count = static_cast<uint32_t>(c.n);
  if (!c.present) return nullptr;
  const T** t = a.Array<const T*>(c.n);
  for (uint64_t k = 0; k < c.n; ++k) t[k] = in.Chance(12) ? nullptr : make();
  return t;
}

const WeftOpPrototype* Prototype(Reader& in, Arena& a) {
  WeftOpPrototype* p = a.Struct<WeftOpPrototype>(in);
  p->op_type = a.Str(in);
  p->version = in.U8() % 3;
  auto io = [&]() {
    WeftIoDesc* d = a.Struct<WeftIoDesc>(in);
    d->name = a.Str(in);
    d->kind = in.Chance(20) ? static_cast<int32_t>(in.U32()) : in.U8() % 3;
    d->dtype_symbol = in.Chance(100) ? a.Str(in) : nullptr;
    d->dtypes = Dtypes(in, a, &d->num_dtypes);
    d->same_as_input = in.Chance(30) ? static_cast<int32_t>(in.U32()) : static_cast<int32_t>(in.U8() % 4) - 1;
    return d;
  };
  p->inputs = Table<WeftIoDesc>(in, a, &p->num_inputs, io);
  p->outputs = Table<WeftIoDesc>(in, a, &p->num_outputs, io);
  p->attrs = Table<WeftAttrDesc>(in, a, &p->num_attrs, [&]() {
    WeftAttrDesc* d = a.Struct<WeftAttrDesc>(in);
    d->name = a.Str(in);
    d->type = in.Chance(20) ? static_cast<int32_t>(in.U32()) : 1 + in.U8() % 10;
    d->required = in.U8() % 3;
    d->default_value = AttrValue(in, a, d->type);
    return d;
  });
  p->dtype_symbols = Table<WeftDtypeSymbol>(in, a, &p->num_dtype_symbols, [&]() {
    WeftDtypeSymbol* s = a.Struct<WeftDtypeSymbol>(in);
    s->name = a.Str(in);
    s->dtypes = Dtypes(in, a, &s->num_dtypes);
    return s;
  });
  return p;
}

void* Create(WeftKernelContext*) {
  static int instance;
  return &instance;
}
void Destroy(void*) {}
WeftStatus Ok(void*, WeftKernelContext*) { return WEFT_STATUS_OK; }
WeftStatus Deserialize(void*, WeftKernelContext*, const uint8_t*, uint64_t) { return WEFT_STATUS_OK; }
WeftStatus QueryFusion(void*, WeftKernelContext*, WeftFusionSupport*) { return WEFT_STATUS_OK; }
WeftStatus QueryLayout(void*, WeftKernelContext*, WeftLayoutSupport*) { return WEFT_STATUS_OK; }

const WeftOpImpl* Impl(Reader& in, Arena& a) {
  WeftOpImpl* i = a.Struct<WeftOpImpl>(in);
  i->class_name = a.Str(in);
  i->capabilities = in.Chance(40) ? in.U64() : in.U8();
  uint8_t fns = in.U8();
  i->create = fns & 1 ? nullptr : Create;
  i->destroy = fns & 2 ? nullptr : Destroy;
  i->execute = fns & 4 ? nullptr : Ok;
  i->infer_shape = fns & 8 ? nullptr : Ok;
  i->infer_dtype = fns & 8 ? nullptr : Ok;
  i->compile = fns & 16 ? nullptr : Ok;
  i->serialize = Ok;
  i->deserialize = fns & 32 ? nullptr : Deserialize;
  // Only written when the claimed size covers them, as an older library's table would be.
  if (WEFT_HAS_FIELD(i, WeftOpImpl, query_fusion)) i->query_fusion = fns & 64 ? nullptr : QueryFusion;
  if (WEFT_HAS_FIELD(i, WeftOpImpl, query_layout)) i->query_layout = fns & 128 ? nullptr : QueryLayout;
  return i;
}

}  // namespace

// The registry's in-memory dlopen (src/rtc/) is not reached from AddBuiltinLibrary; this target
// links without the kernel cache.
namespace weft::internal {
Expected<void*> DlopenFromMemory(const std::string& name, const uint8_t*, size_t, int*) {
  return InvalidArgument(name + ": not available in this fuzz target");
}
}  // namespace weft::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  Arena a;
  WeftOpLibrary* l = a.Struct<WeftOpLibrary>(in);
  l->abi_version = in.Chance(30) ? in.U32() : in.U8() % 3;
  l->error = in.Chance(10) ? a.Str(in) : nullptr;
  l->prototypes = Table<WeftOpPrototype>(in, a, &l->num_prototypes, [&]() { return Prototype(in, a); });
  l->impls = Table<WeftOpImpl>(in, a, &l->num_impls, [&]() { return Impl(in, a); });
  weft::internal::OpRegistry registry(in.Chance(128));
  weft::Status s = registry.AddBuiltinLibrary(in.Chance(20) ? nullptr : l);
  if (s.ok()) {
    // What registration kept must be readable: list it and look every op up.
    for (const auto& info : registry.List()) {
      auto op = registry.Find(info.op_type);
      if (!op) __builtin_trap();
      volatile size_t sink = op->proto.inputs.size() + op->proto.outputs.size() + op->proto.attrs.size();
      (void)sink;
    }
  } else if (s.message().empty()) {
    __builtin_trap();  // every refusal says why
  }
  return 0;
}
