/*
 * The runtime symbols that uploaded modules may call and that tetherd itself does not use, kept
 * in the executable (which exports its symbols, ENABLE_EXPORTS) by the reference below:
 * tether_platform_cycles, the clock a profiling build reads around each node (ns here;
 * docs/profile.md). tether_set_error and the tensor checks are linked in by tetherd's own use.
 *
 * What must stay true: every name listed resolves for a dlopen'ed module (test_profile loads a
 * profiling build into tetherd).
 */
#include "tether/crt/platform.h"

__attribute__((used)) const void *const tetherd_module_exports[] = {
    (const void *)&tether_platform_cycles,
};
