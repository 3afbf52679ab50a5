/* libFuzzer target for yt_npy_load: any input must be either rejected with an error or loaded;
 * nothing may crash, read out of bounds or leak, and an array that loads must save and load again
 * to the same tensor. Run with `make fuzz` (tests/fuzz/run.sh). */
#include <stdint.h>

#include <yaten.h>

#include "fuzz_util.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size);
    yt_tensor *t = yt_npy_load(path);
    if (t == NULL) {
        FUZZ_CHECK(yt_errmsg()[0] != '\0');
    } else {
        const char *again = fuzz_scratch_path("again.npy");
        FUZZ_CHECK(yt_npy_save(again, t) == YT_OK);
        yt_tensor *u = yt_npy_load(again);
        FUZZ_CHECK(u != NULL);
        fuzz_check_same_tensor(t, u);
        yt_release(u);
        yt_release(t);
    }
    fuzz_check_no_leaks();
    return 0;
}
