/* Build and run-time information exposed to users. */
#include "blis_setup.h"
#include "internal.h"

const char *
yt_blas_info(void)
{
    return yt__blis_arch_name();
}
