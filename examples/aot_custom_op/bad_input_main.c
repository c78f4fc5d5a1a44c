/* Feeds the generated module an input with a negative element: checked_sqrt's emitted code
 * reports its status 1, which the module returns unchanged (1001, inside
 * demo_status_custom_first .. demo_status_custom_last), with failed_op naming the node.
 * Exit status 0 when that is what happens. */
#include <stdio.h>
#include <string.h>

#include "demo.h"

static demo_context ctx;

int main(void) {
  const float bad[8] = {1.f, 2.f, 3.f, 4.f, 5.f, -0.25f, 7.f, 8.f};
  int32_t s = demo_init(&ctx, NULL, 0);
  if (s != demo_status_ok) {
    printf("init failed: %d\n", (int)s);
    return 1;
  }
  memcpy(ctx.tensor_ptrs[demo_inputs[0].index], bad, sizeof bad);
  s = demo_run(&ctx);
  printf("demo_run on a negative input returned %d from operator %d ('%s')\n", (int)s, (int)ctx.failed_op,
         demo_op_name(ctx.failed_op) ? demo_op_name(ctx.failed_op) : "?");
  if (s < demo_status_custom_first || s > demo_status_custom_last) return 1;
  return s == 1001 ? 0 : 1;
}
