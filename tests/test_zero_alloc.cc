// A static-shape run makes no heap allocation: malloc and friends are replaced in this
// executable and counted while the counting flag is on.
#include <malloc.h>

#include <atomic>

#include "test_util.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {
std::atomic<long> g_allocs{0};
thread_local bool t_counting = false;
inline void Count() {
  if (t_counting) g_allocs.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t n) { Count(); return __libc_malloc(n); }
void* calloc(size_t a, size_t b) { Count(); return __libc_calloc(a, b); }
void* realloc(void* p, size_t n) { Count(); return __libc_realloc(p, n); }
void* memalign(size_t a, size_t n) { Count(); return __libc_memalign(a, n); }
void* aligned_alloc(size_t a, size_t n) { Count(); return __libc_memalign(a, n); }
int posix_memalign(void** p, size_t a, size_t n) {
  Count();
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;
}
}

namespace weft {
namespace {

long CountAllocs(const std::function<void()>& f) {
  g_allocs = 0;
  t_counting = true;
  f();
  t_counting = false;
  return g_allocs.load();
}

TEST(ZeroAlloc, TheCounterSeesAllocations) {
  // Guards against a counter that never fires (which would make the real test meaningless).
  long n = CountAllocs([] {
    std::vector<int> v(100);
    auto p = std::make_unique<std::string>(200, 'x');
    void* q = std::aligned_alloc(64, 128);
    std::free(q);
    asm volatile("" : : "r"(v.data()), "r"(p.get()) : "memory");
  });
  EXPECT_GE(n, 3);
}

TEST(ZeroAlloc, StaticShapeRunsAllocateNothing) {
  auto s = test::MakeSession({"test_ops"});
  auto w = test::RandomFloat({16, 16}, 1);
  Graph g;
  g.AddInput("x", DT_FLOAT, {4, 16}).AddConstant("w", w);
  g.AddNode("MatMul", "mm", {"x", "w"}, {"h"});      // uses MallocWorkSpace
  g.AddNode("Add", "add", {"h", "x"}, {"a"});
  g.AddNode("Relu", "relu", {"a"}, {"r"});
  g.AddNode("SumN", "sum", {"r", "a", "h"}, {"s"});  // plugin, dynamic inputs, workspace
  g.AddNode("ScaleAttrs", "sc", {"s"}, {"y"}, {{"scale", AttrValue::Float(0.5f)}});
  g.AddOutput("y");
  auto m = s->Compile(g).value();
  auto ctx = m->CreateRunContext();
  auto x = test::RandomFloat({4, 16}, 2);
  HostTensor y(DT_FLOAT, {4, 16});
  TensorRef in = TensorRef::Of(x), out = TensorRef::Of(y);
  ASSERT_TRUE(m->Run(*ctx, &in, 1, &out, 1).ok());  // first run may size the scratch area
  HostTensor first = y;
  Status st;
  long n = CountAllocs([&] {
    for (int k = 0; k < 100; ++k) st = m->Run(*ctx, &in, 1, &out, 1);
  });
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(n, 0) << "heap allocations during 100 static-shape runs";
  EXPECT_EQ(std::memcmp(first.data(), y.data(), y.bytes()), 0);
}

}  // namespace
}  // namespace weft
