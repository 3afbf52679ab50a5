/* libFuzzer target for yt_safetensors_load (and yt_safetensors_read_index): any input must be
 * either rejected with an error or loaded; nothing may crash, read out of bounds or leak, and a
 * file that loads must save and load again to the same tensors and metadata. Run with
 * `make fuzz` (tests/fuzz/run.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <yaten.h>

#include "fuzz_util.h"

static void
check_same(const yt_named_tensors *a, const yt_named_tensors *b, const yt_metadata *ma,
           const yt_metadata *mb)
{
    FUZZ_CHECK(a->count == b->count);
    for (int64_t i = 0; i < a->count; i++) {
        FUZZ_CHECK(strcmp(a->names[i], b->names[i]) == 0);
        fuzz_check_same_tensor(a->tensors[i], b->tensors[i]);
    }
    FUZZ_CHECK(ma->count == mb->count);
    for (int64_t i = 0; i < ma->count; i++)
        FUZZ_CHECK(strcmp(yt_metadata_get(mb, ma->keys[i]), ma->values[i]) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size);
    yt_named_tensors list = YT_NAMED_TENSORS_INIT;
    yt_metadata meta = YT_METADATA_INIT;
    yt_safetensors_index index = YT_SAFETENSORS_INDEX_INIT;
    yt_status st = yt_safetensors_load(path, &list, &meta);
    yt_status st_index = yt_safetensors_read_index(path, &index, NULL);
    FUZZ_CHECK((st == YT_OK) == (st_index == YT_OK)); /* the two agree on what is valid */
    if (st != YT_OK) {
        FUZZ_CHECK(list.count == 0 && meta.count == 0);
        FUZZ_CHECK(yt_errmsg()[0] != '\0');
    } else {
        FUZZ_CHECK(index.count == list.count);
        const char *again = fuzz_scratch_path("again.safetensors");
        yt_named_tensors list2 = YT_NAMED_TENSORS_INIT;
        yt_metadata meta2 = YT_METADATA_INIT;
        FUZZ_CHECK(yt_safetensors_save(again, &list, &meta) == YT_OK);
        FUZZ_CHECK(yt_safetensors_load(again, &list2, &meta2) == YT_OK);
        check_same(&list, &list2, &meta, &meta2);
        yt_named_tensors_clear(&list2);
        yt_metadata_clear(&meta2);
    }
    yt_safetensors_index_clear(&index);
    yt_named_tensors_clear(&list);
    yt_metadata_clear(&meta);
    fuzz_check_no_leaks();
    return 0;
}
