// GE scenarios 2 and 3: an operator whose kernel is generated and compiled at graph-compile time.
//
//   Compile      generates C source specialized for the input shape and type (the element count
//                is a constant, so the compiler unrolls and vectorizes for exactly that size),
//                compiles it through the runtime's kernel cache, and keeps the kernel keyed by
//                shape ("[4,2048]/float32"), as GE's sample does.
//   Serialize    writes the key → kernel-id table (blob "") and each kernel's source (blob
//                "source:<key>"); the engine stores the compiled kernels themselves.
//   Deserialize  restores the table and finds each kernel again by id. Compile is not called.
//   Execute      launches the kernel for the input's shape; a shape nobody compiled (dynamic
//                runs) uses the generic loop.
#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include "compilable_add_custom_proto.h"

namespace {

using KernelFn = void (*)(const void* x, const void* y, void* z);

std::string ShapeKey(const gert::Tensor* x) {
  return x->GetShape().ToString() + "/" + ge::DataTypeName(x->GetDataType());
}

std::string GenerateSource(int64_t n, ge::DataType dt) {
  const char* t = dt == ge::DT_FLOAT ? "float" : "_Float16";
  std::ostringstream s;
  s << "/* CompilableAddCustom kernel: " << n << " elements of " << ge::DataTypeName(dt) << " */\n"
    << "#define N " << n << "L\n"
    << "typedef " << t << " T;\n"
    << "void weft_add_kernel(const void* xv, const void* yv, void* zv) {\n"
    << "  const T* x = (const T*)xv; const T* y = (const T*)yv; T* z = (T*)zv;\n"
    << "  for (long i = 0; i < N; ++i) z[i] = (T)((float)x[i] + (float)y[i]);\n"
    << "}\n";
  return s.str();
}

void GenericAdd(const gert::Tensor* x, const gert::Tensor* y, gert::Tensor* z) {
  int64_t n = x->GetShapeSize();
  if (x->GetDataType() == ge::DT_FLOAT) {
    for (int64_t i = 0; i < n; ++i) z->GetData<float>()[i] = x->GetData<float>()[i] + y->GetData<float>()[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      z->GetData<ge::float16>()[i] = ge::float16(static_cast<float>(x->GetData<ge::float16>()[i]) +
                                                 static_cast<float>(y->GetData<ge::float16>()[i]));
  }
}

}  // namespace

class CompilableAddCustom : public ge::EagerExecuteOp, public ge::ShapeInferOp, public ge::CompilableOp,
                            public ge::PortableOp {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    const ge::Shape* x = ctx->GetInputShape(0);
    const ge::Shape* y = ctx->GetInputShape(1);
    if (!x->IsUnknown() && !y->IsUnknown() && *x != *y) {
      ctx->SetError("x " + x->ToString() + " and y " + y->ToString() + " must have the same shape");
      return ge::GRAPH_FAILED;
    }
    *ctx->GetOutputShape(0) = *x;
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus InferDataType(gert::InferDataTypeContext* ctx) override {
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
  }

  ge::graphStatus Compile(gert::OpCompileContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    if (x->GetShape().IsUnknown()) return ge::GRAPH_SUCCESS;  // shapes known only at run time
    // The platform the kernel is built for; this generator writes portable C for host CPUs.
    const char* target_opt = ctx->GetOption("weft.target");
    std::string target = target_opt ? target_opt : "";
    bool host_cpu = target.rfind("x86_64", 0) == 0 || target.rfind("aarch64", 0) == 0;
    if (!host_cpu) {
      ctx->SetError("no kernel generator for target '" + target + "'");
      return ge::GRAPH_FAILED;
    }
    std::string key = ShapeKey(x);
    std::string src = GenerateSource(x->GetShapeSize(), x->GetDataType());
    auto k = ctx->CompileKernel(src, "weft_add_kernel", "c", "-O3", ("CompilableAddCustom" + key).c_str());
    if (!k.symbol) return ge::GRAPH_FAILED;  // the error carries the compiler's diagnostics
    kernels_[key] = {k.id, reinterpret_cast<KernelFn>(k.symbol)};
    sources_[key] = src;
    return ge::GRAPH_SUCCESS;
  }

  ge::graphStatus SerializeKeyed(gert::OpSerializeContext* ctx) override {
    std::string table;
    for (auto& [key, k] : kernels_) table += key + " " + k.id + "\n";
    if (ctx->WriteBlob("", table.data(), table.size()) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    for (auto& [key, src] : sources_)
      if (ctx->WriteBlob("source:" + key, src.data(), src.size()) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return ge::GRAPH_SUCCESS;
  }

  ge::graphStatus DeserializeKeyed(gert::OpDeserializeContext* ctx) override {
    std::vector<uint8_t> blob = ctx->GetBlob("");
    std::istringstream in(std::string(blob.begin(), blob.end()));
    std::string key, id;
    while (in >> key >> id) {
      void* f = ctx->GetKernel(id, "weft_add_kernel");
      if (!f) return ge::GRAPH_FAILED;  // the engine recorded why
      kernels_[key] = {id, reinterpret_cast<KernelFn>(f)};
    }
    return ge::GRAPH_SUCCESS;
  }

  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    const gert::Tensor* y = ctx->GetInputTensor(1);
    if (x->GetShape() != y->GetShape()) {
      ctx->SetError("x " + x->GetShape().ToString() + " and y " + y->GetShape().ToString() + " must have the same shape");
      return ge::GRAPH_FAILED;
    }
    gert::Tensor* z = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (z == nullptr) return ge::GRAPH_FAILED;
    auto it = kernels_.find(ShapeKey(x));
    if (it != kernels_.end()) it->second.fn(x->GetAddr(), y->GetAddr(), z->GetAddr());
    else GenericAdd(x, y, z);
    return ge::GRAPH_SUCCESS;
  }

 private:
  struct Kernel {
    std::string id;
    KernelFn fn = nullptr;
  };
  std::map<std::string, Kernel> kernels_;
  std::map<std::string, std::string> sources_;
};

REG_AUTO_MAPPING_OP(CompilableAddCustom);
