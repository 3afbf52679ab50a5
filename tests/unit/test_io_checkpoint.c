/* Checkpoints: every part round-trips under its prefix, partial loads, missing parts, foreign
 * files and unknown prefixes are reported, argument checks; the RNG state dict round-trips the
 * full uint64 range bit-exactly and replays the same numbers. */
#include <stdint.h>

#include "test_io_util.h"

TestSuite(checkpoint, .init = io_tmp_begin, .fini = io_tmp_end);

static void
add(yt_named_tensors *list, const char *name, yt_tensor *t)
{
    cr_assert_eq(yt_named_tensors_add(list, name, t), YT_OK, "%s", yt_errmsg());
    yt_release(t);
}

static yt_tensor *
iota(int64_t n, yt_dtype dtype)
{
    yt_tensor *f = test_iota(&n, 1);
    yt_tensor *t = yt_to(f, dtype);
    yt_release(f);
    return t;
}

/* Five parts as a training run has them. */
typedef struct run_state {
    yt_named_tensors model, optim, sched, loader, rng;
    yt_checkpoint_part parts[5];
} run_state;

static void
state_init(run_state *s)
{
    memset(s, 0, sizeof *s); /* five empty lists (YT_NAMED_TENSORS_INIT is all zeros) */
    const char *prefixes[5] = {"model.", "optimizer.", "scheduler.", "loader.", "rng."};
    yt_named_tensors *lists[5] = {&s->model, &s->optim, &s->sched, &s->loader, &s->rng};
    for (int i = 0; i < 5; i++)
        s->parts[i] = (yt_checkpoint_part){prefixes[i], lists[i]};
}

static void
state_fill(run_state *s)
{
    add(&s->model, "0.weight", iota(6, YT_DTYPE_F32));
    add(&s->model, "0.bias", iota(2, YT_DTYPE_F32));
    add(&s->model, "1.num_batches_tracked", yt_scalar_tensor(yt_int(7), YT_DTYPE_I64));
    add(&s->optim, "state.0.weight.exp_avg", iota(6, YT_DTYPE_F32));
    add(&s->optim, "group.0.lr", yt_scalar_tensor(yt_float(0.001), YT_DTYPE_F64));
    add(&s->sched, "last_epoch", yt_scalar_tensor(yt_int(3), YT_DTYPE_I64));
    add(&s->loader, "epoch", yt_scalar_tensor(yt_int(1), YT_DTYPE_I64));
    cr_assert_eq(yt_generator_state_dict(NULL, &s->rng), YT_OK, "%s", yt_errmsg());
}

static void
state_clear(run_state *s)
{
    for (int i = 0; i < 5; i++)
        yt_named_tensors_clear(s->parts[i].tensors);
}

Test(checkpoint, every_part_round_trips)
{
    run_state saved, loaded;
    state_init(&saved);
    state_init(&loaded);
    state_fill(&saved);
    yt_metadata meta = YT_METADATA_INIT;
    cr_assert_eq(yt_metadata_set(&meta, "epoch", "3"), YT_OK);
    const char *path = io_path("ckpt.safetensors");
    cr_assert_eq(yt_checkpoint_save(path, saved.parts, 5, &meta), YT_OK, "%s", yt_errmsg());

    /* A plain safetensors file with prefixed names and the format metadata. */
    yt_named_tensors flat = YT_NAMED_TENSORS_INIT;
    yt_metadata flat_meta = YT_METADATA_INIT;
    cr_assert_eq(yt_safetensors_load(path, &flat, &flat_meta), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(flat.count, 9);
    cr_assert_str_eq(flat.names[0], "model.0.weight");
    cr_assert_str_eq(flat.names[8], "rng.offset");
    cr_assert_str_eq(yt_metadata_get(&flat_meta, "format"), "yaten-checkpoint");
    cr_assert_str_eq(yt_metadata_get(&flat_meta, "version"), "1");
    cr_assert_str_eq(yt_metadata_get(&flat_meta, "parts"),
                     "model.,optimizer.,scheduler.,loader.,rng.");
    yt_named_tensors_clear(&flat);
    yt_metadata_clear(&flat_meta);

    yt_metadata got_meta = YT_METADATA_INIT;
    cr_assert_eq(yt_checkpoint_load(path, loaded.parts, 5, &got_meta), YT_OK, "%s", yt_errmsg());
    for (int i = 0; i < 5; i++) {
        const yt_named_tensors *a = saved.parts[i].tensors, *b = loaded.parts[i].tensors;
        cr_assert_eq(b->count, a->count, "part %s", saved.parts[i].prefix);
        for (int64_t k = 0; k < a->count; k++) {
            cr_assert_str_eq(b->names[k], a->names[k]);
            io_expect_same(b->tensors[k], a->tensors[k], a->names[k]);
        }
    }
    cr_assert_eq(got_meta.count, 1, "the reserved keys are not handed back");
    cr_assert_str_eq(yt_metadata_get(&got_meta, "epoch"), "3");

    /* The metadata handed back saves again unchanged. */
    cr_assert_eq(yt_checkpoint_save(path, saved.parts, 5, &got_meta), YT_OK, "%s", yt_errmsg());
    state_clear(&saved);
    state_clear(&loaded);
    yt_metadata_clear(&meta);
    yt_metadata_clear(&got_meta);
    YT_ASSERT_NO_LEAKS();
}

Test(checkpoint, partial_loads_and_empty_parts)
{
    run_state saved;
    state_init(&saved);
    state_fill(&saved);
    yt_named_tensors_clear(&saved.sched); /* a part with no tensors is still a part */
    const char *path = io_path("c.safetensors");
    cr_assert_eq(yt_checkpoint_save(path, saved.parts, 5, NULL), YT_OK, "%s", yt_errmsg());

    yt_named_tensors model = YT_NAMED_TENSORS_INIT, sched = YT_NAMED_TENSORS_INIT;
    yt_checkpoint_part want[2] = {{"model.", &model}, {"scheduler.", &sched}};
    cr_assert_eq(yt_checkpoint_load(path, want, 2, NULL), YT_OK, "%s", yt_errmsg());
    cr_assert_eq(model.count, 3);
    cr_assert_eq(sched.count, 0);
    yt_named_tensors_clear(&model);

    /* A part the file lacks: an error naming the parts it has; the lists stay empty. */
    yt_named_tensors extra = YT_NAMED_TENSORS_INIT;
    yt_checkpoint_part missing[2] = {{"model.", &model}, {"ema.", &extra}};
    cr_assert_eq(yt_checkpoint_load(path, missing, 2, NULL), YT_ERR_IO);
    YT_ASSERT_ERROR(YT_ERR_IO, path);
    cr_assert(strstr(yt_errmsg(), "the checkpoint has no part 'ema.' (it has model.,optimizer.,"
                                  "scheduler.,loader.,rng.)") != NULL,
              "%s", yt_errmsg());
    cr_assert_eq(model.count, 0);
    state_clear(&saved);
    YT_ASSERT_NO_LEAKS();
}

Test(checkpoint, rejects_foreign_files)
{
    yt_named_tensors list = YT_NAMED_TENSORS_INIT, model = YT_NAMED_TENSORS_INIT;
    yt_checkpoint_part part = {"model.", &model};
    add(&list, "model.w", iota(2, YT_DTYPE_F32));
    const char *path = io_path("plain.safetensors");
    cr_assert_eq(yt_safetensors_save(path, &list, NULL), YT_OK);
    cr_assert_eq(yt_checkpoint_load(path, &part, 1, NULL), YT_ERR_IO);
    cr_assert(strstr(yt_errmsg(), "not a yaten checkpoint (metadata 'format' is missing") != NULL,
              "%s", yt_errmsg());

    yt_metadata meta = YT_METADATA_INIT;
    yt_metadata_set(&meta, "format", "yaten-checkpoint");
    yt_metadata_set(&meta, "version", "2");
    yt_metadata_set(&meta, "parts", "model.");
    cr_assert_eq(yt_safetensors_save(path, &list, &meta), YT_OK);
    cr_assert_eq(yt_checkpoint_load(path, &part, 1, NULL), YT_ERR_IO);
    cr_assert(strstr(yt_errmsg(), "checkpoint version '2' is not supported") != NULL, "%s",
              yt_errmsg());

    yt_metadata_set(&meta, "version", "1");
    add(&list, "optimizer.m", iota(2, YT_DTYPE_F32));
    cr_assert_eq(yt_safetensors_save(path, &list, &meta), YT_OK);
    cr_assert_eq(yt_checkpoint_load(path, &part, 1, NULL), YT_ERR_IO);
    cr_assert(strstr(yt_errmsg(), "tensor 'optimizer.m' belongs to none of the checkpoint's parts "
                                  "(model.)") != NULL,
              "%s", yt_errmsg());
    cr_assert_eq(model.count, 0);

    yt_metadata_set(&meta, "parts", "model.,model.sub.");
    cr_assert_eq(yt_safetensors_save(path, &list, &meta), YT_OK);
    cr_assert_eq(yt_checkpoint_load(path, &part, 1, NULL), YT_ERR_IO);
    cr_assert(strstr(yt_errmsg(), "parts 'model.' and 'model.sub.' overlap") != NULL, "%s",
              yt_errmsg());
    yt_named_tensors_clear(&list);
    yt_metadata_clear(&meta);
    YT_ASSERT_NO_LEAKS();
}

Test(checkpoint, rejects_bad_arguments)
{
    yt_named_tensors a = YT_NAMED_TENSORS_INIT, b = YT_NAMED_TENSORS_INIT;
    const char *path = io_path("x.safetensors");
    yt_checkpoint_part overlap[2] = {{"model.", &a}, {"model.sub.", &b}};
    cr_assert_eq(yt_checkpoint_save(path, overlap, 2, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "checkpoint_save: ");
    cr_assert(strstr(yt_errmsg(), "prefixes 'model.' and 'model.sub.' overlap") != NULL, "%s",
              yt_errmsg());
    yt_checkpoint_part same[2] = {{"model.", &a}, {"model.", &b}};
    cr_assert_eq(yt_checkpoint_save(path, same, 2, NULL), YT_ERR_VALUE);
    yt_checkpoint_part empty = {"", &a}, comma = {"a,b.", &a}, null_list = {"m.", NULL};
    cr_assert_eq(yt_checkpoint_save(path, &empty, 1, NULL), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "parts[0].prefix '' must be non-empty, without ','") != NULL,
              "%s", yt_errmsg());
    cr_assert_eq(yt_checkpoint_save(path, &comma, 1, NULL), YT_ERR_VALUE);
    cr_assert_eq(yt_checkpoint_save(path, &null_list, 1, NULL), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "parts[0].tensors ('m.') is NULL") != NULL, "%s", yt_errmsg());
    cr_assert_eq(yt_checkpoint_save(path, same, 0, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "checkpoint_save: ");
    cr_assert_eq(yt_checkpoint_save(NULL, same, 1, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "checkpoint_save: path is NULL");
    yt_metadata meta = YT_METADATA_INIT;
    yt_metadata_set(&meta, "parts", "x");
    cr_assert_eq(yt_checkpoint_save(path, same, 1, &meta), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "metadata key 'parts' is reserved") != NULL, "%s", yt_errmsg());
    yt_metadata_clear(&meta);

    /* Loading needs empty lists. */
    cr_assert_eq(yt_checkpoint_save(path, same, 1, NULL), YT_OK, "%s", yt_errmsg());
    add(&a, "w", iota(1, YT_DTYPE_F32));
    cr_assert_eq(yt_checkpoint_load(path, same, 1, NULL), YT_ERR_VALUE);
    cr_assert(strstr(yt_errmsg(), "parts[0].tensors ('model.') must be empty (it holds 1)") != NULL,
              "%s", yt_errmsg());
    cr_assert_eq(a.count, 1);
    yt_named_tensors_clear(&a);
    cr_assert_eq(io_file_count(), 1);
    YT_ASSERT_NO_LEAKS();
}

Test(checkpoint, generator_state_round_trips_bit_exactly)
{
    /* Values past INT64_MAX, stored as negative i64 bits. */
    const uint64_t seeds[] = {0, 42, UINT64_MAX, (uint64_t)1 << 63};
    const uint64_t offsets[] = {0, 12345, UINT64_MAX - 1, ((uint64_t)1 << 63) + 5};
    const char *path = io_path("rng.safetensors");
    for (int k = 0; k < 4; k++) {
        yt_generator *g = yt_generator_create(seeds[k]);
        yt_generator_state st = {seeds[k], offsets[k]};
        cr_assert_eq(yt_generator_set_state(g, &st), YT_OK);
        yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
        cr_assert_eq(yt_generator_state_dict(g, &sd), YT_OK, "%s", yt_errmsg());
        cr_assert_eq(yt_tensor_dim(sd.tensors[0]), 0);
        cr_assert_eq(yt_tensor_dtype(sd.tensors[1]), YT_DTYPE_I64);
        cr_assert_eq(yt_safetensors_save(path, &sd, NULL), YT_OK, "%s", yt_errmsg());
        yt_named_tensors_clear(&sd);
        cr_assert_eq(yt_safetensors_load(path, &sd, NULL), YT_OK, "%s", yt_errmsg());
        yt_generator *h = yt_generator_create(7);
        cr_assert_eq(yt_generator_load_state_dict(h, &sd), YT_OK, "%s", yt_errmsg());
        yt_generator_state got;
        yt_generator_get_state(h, &got);
        cr_assert(got.seed == seeds[k] && got.offset == offsets[k],
                  "state %llu/%llu came back as %llu/%llu", (unsigned long long)seeds[k],
                  (unsigned long long)offsets[k], (unsigned long long)got.seed,
                  (unsigned long long)got.offset);
        /* The restored generator draws what the original draws. */
        const int64_t n = 1000;
        yt_tensor *a = yt_rand_ex(&n, 1, g, YT_DTYPE_F64, YT_DEVICE_NONE);
        yt_tensor *b = yt_rand_ex(&n, 1, h, YT_DTYPE_F64, YT_DEVICE_NONE);
        io_expect_same(b, a, "draws after restoring");
        yt_release(a);
        yt_release(b);
        yt_named_tensors_clear(&sd);
        yt_generator_release(g);
        yt_generator_release(h);
    }
    YT_ASSERT_NO_LEAKS();
}

Test(checkpoint, generator_state_errors)
{
    yt_named_tensors sd = YT_NAMED_TENSORS_INIT;
    cr_assert_eq(yt_generator_state_dict(NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "generator_state_dict: out is NULL");
    cr_assert_eq(yt_generator_load_state_dict(NULL, NULL), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "generator_load_state_dict: sd is NULL");

    add(&sd, "seed", yt_scalar_tensor(yt_int(1), YT_DTYPE_I64));
    cr_assert_eq(yt_generator_state_dict(NULL, &sd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "generator_state_dict: out already holds 'seed'");
    cr_assert_eq(sd.count, 1);
    yt_generator_state before;
    yt_generator_get_state(NULL, &before);
    cr_assert_eq(yt_generator_load_state_dict(NULL, &sd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "generator_load_state_dict: 'offset' is missing");
    add(&sd, "offset", yt_scalar_tensor(yt_float(2), YT_DTYPE_F64));
    cr_assert_eq(yt_generator_load_state_dict(NULL, &sd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE,
                    "generator_load_state_dict: 'offset' must be a one-element i64 CPU tensor, "
                    "got f64");
    yt_named_tensors_clear(&sd);
    cr_assert_eq(yt_generator_state_dict(NULL, &sd), YT_OK);
    add(&sd, "extra", yt_scalar_tensor(yt_int(1), YT_DTYPE_I64));
    cr_assert_eq(yt_generator_load_state_dict(NULL, &sd), YT_ERR_VALUE);
    YT_ASSERT_ERROR(YT_ERR_VALUE, "generator_load_state_dict: unexpected 'extra'");
    yt_generator_state after;
    yt_generator_get_state(NULL, &after);
    cr_assert(after.seed == before.seed && after.offset == before.offset,
              "the generator is unchanged by a failed load");
    yt_named_tensors_clear(&sd);
    YT_ASSERT_NO_LEAKS();
}
