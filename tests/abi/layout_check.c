/* The level-1 layout of the plugin ABI, checked at compile time (tests/abi/level1_layout.inc).
 * Built twice: against the frozen level-1 header, where every size and offset must be exactly
 * as recorded, and against the current header, which may only append fields: no offset moves and
 * no struct shrinks. A change that breaks either fails the build. */
#include <stddef.h>

#include "weft/c/weft_plugin.h"

#define WEFT_LAYOUT_FIELD(type, field, offset) \
  _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved from its level-1 offset");
#ifdef WEFT_FROZEN_HEADER
#define WEFT_LAYOUT_SIZE(type, size) _Static_assert(sizeof(type) == (size), "sizeof(" #type ") differs from level 1");
#else
#define WEFT_LAYOUT_SIZE(type, size) _Static_assert(sizeof(type) >= (size), "sizeof(" #type ") shrank below level 1");
#endif

#include "level1_layout.inc"

/* An object file needs one definition. */
int weft_abi_layout_checked(void) { return 1; }
