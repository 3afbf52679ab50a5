/* Shared helpers for the Criterion unit tests. */
#ifndef YT_TEST_UTIL_H
#define YT_TEST_UTIL_H

#include <string.h>

#include <criterion/criterion.h>

#include <yaten.h>

/* Every test ends by proving that nothing leaked: no live tensor handles and no live storage
 * bytes (libuv's MAKE_VALGRIND_HAPPY). Clears the thread's error first so a message from an
 * expected failure does not linger into the next test. */
#define YT_ASSERT_NO_LEAKS()                                                                       \
    do {                                                                                           \
        yt_clear_error();                                                                          \
        cr_assert_eq(yt_live_tensors(), 0, "leak: %lld tensors still alive",                       \
                     (long long)yt_live_tensors());                                                \
        cr_assert_eq(yt_live_bytes(), 0, "leak: %lld bytes of storage still alive",                \
                     (long long)yt_live_bytes());                                                  \
    } while (0)

/* Asserts that the last call failed with `code` and that its message starts with `prefix`. */
#define YT_ASSERT_ERROR(code, prefix)                                                              \
    do {                                                                                           \
        cr_assert_eq(yt_errcode(), (code), "expected %s, got %s (%s)", yt_status_name(code),       \
                     yt_status_name(yt_errcode()), yt_errmsg());                                   \
        cr_assert(strncmp(yt_errmsg(), (prefix), strlen(prefix)) == 0,                             \
                  "message '%s' does not start with '%s'", yt_errmsg(), (prefix));                 \
    } while (0)

#endif
