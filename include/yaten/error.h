/* Errors: every failing call returns NULL (or a non-zero yt_status) and records a thread-local
 * error: a code and a message naming the op, the argument and the values, e.g.
 *   "mm: self.size(1)=3 does not match mat2.size(0)=4".
 * A call given NULL returns NULL without touching the record, so the first error survives a
 * chain of calls and can be checked once at its end. */
#ifndef YATEN_ERROR_H
#define YATEN_ERROR_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Code of the last error on this thread, or YT_OK if none was recorded since yt_clear_error(). */
YT_API yt_status yt_errcode(void);

/* Message of the last error on this thread ("" if none). The pointer stays valid until the next
 * error is recorded on this thread. */
YT_API const char *yt_errmsg(void);

/* Forget the last error on this thread. */
YT_API void yt_clear_error(void);

/* Constant name of a status code ("YT_ERR_SHAPE"), or "YT_ERR_UNKNOWN". */
YT_API const char *yt_status_name(yt_status status);

/* Library version string (same as YT_VERSION of the headers it was built with). */
YT_API const char *yt_version(void);

#ifdef __cplusplus
}
#endif

#endif
