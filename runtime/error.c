/* The thread-local last error: a status code and a message naming the op, the argument and the
 * values. Ops return NULL (or a status) and leave the details here, as SQLite's errcode/errmsg
 * do, but per thread because yaten has no connection object. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

enum { ERRMSG_CAP = 512 };

typedef struct error_record {
    yt_status code;
    char msg[ERRMSG_CAP];
} error_record;

static _Thread_local error_record last_error;

static void
record(yt_status code, const char *fmt, va_list ap)
{
    /* Format into a scratch buffer first: the arguments may point into last_error.msg itself
     * (an op re-wrapping the message of a nested failure). */
    char buf[ERRMSG_CAP];
    int len = vsnprintf(buf, sizeof buf, fmt, ap);
    if (len < 0)
        snprintf(buf, sizeof buf, "(unformattable error message: %s)", fmt);
    else if ((size_t)len >= sizeof buf)
        memcpy(buf + sizeof buf - 4, "...", 4); /* mark truncation */
    memcpy(last_error.msg, buf, sizeof buf);
    /* A failure must never read as success. */
    last_error.code = code == YT_OK ? YT_ERR_INTERNAL : code;
}

yt_tensor *
yt__fail(yt_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(code, fmt, ap);
    va_end(ap);
    return NULL;
}

yt_status
yt__fail_status(yt_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(code, fmt, ap);
    va_end(ap);
    return last_error.code;
}

/* Whether msg starts with name and suffix, then a colon. */
static bool
names_op(const char *msg, const char *name, const char *suffix)
{
    const size_t len = strlen(name), suffix_len = strlen(suffix);
    return strncmp(msg, name, len) == 0 && strncmp(msg + len, suffix, suffix_len) == 0 &&
           msg[len + suffix_len] == ':';
}

void
yt__error_context(const char *base, const char *suffix)
{
    if (last_error.code == YT_OK || names_op(last_error.msg, base, "") ||
        names_op(last_error.msg, base, suffix))
        return;
    yt__fail_status(last_error.code, "%s%s: %s", base, suffix, last_error.msg);
}

void
yt__error_rename(const char *from, const char *to)
{
    if (last_error.code != YT_OK && names_op(last_error.msg, from, ""))
        yt__fail_status(last_error.code, "%s%s", to, last_error.msg + strlen(from));
}

yt_status
yt_errcode(void)
{
    return last_error.code;
}

const char *
yt_errmsg(void)
{
    return last_error.msg;
}

void
yt_clear_error(void)
{
    last_error.code = YT_OK;
    last_error.msg[0] = '\0';
}

const char *
yt_status_name(yt_status status)
{
    static const char *const names[] = {
        [YT_OK] = "YT_OK",
        [YT_ERR_SHAPE] = "YT_ERR_SHAPE",
        [YT_ERR_DTYPE] = "YT_ERR_DTYPE",
        [YT_ERR_DEVICE] = "YT_ERR_DEVICE",
        [YT_ERR_VALUE] = "YT_ERR_VALUE",
        [YT_ERR_NOMEM] = "YT_ERR_NOMEM",
        [YT_ERR_STATE] = "YT_ERR_STATE",
        [YT_ERR_IO] = "YT_ERR_IO",
        [YT_ERR_CUDA] = "YT_ERR_CUDA",
        [YT_ERR_INTERNAL] = "YT_ERR_INTERNAL",
    };
    if ((unsigned)status >= sizeof names / sizeof names[0] || names[status] == NULL)
        return "YT_ERR_UNKNOWN";
    return names[status];
}

const char *
yt_version(void)
{
    return YT_VERSION;
}
