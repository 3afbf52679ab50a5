# yaten: one top-level Makefile, out-of-tree build/ (build-asan/ for the sanitizer build).
# Quiet by default; `make V=1` prints full commands.
#
#   make            library (static + shared), yaten.pc, examples
#   make demo       the main job (see README)
#   make test       everything CI checks: generated/ up to date, codegen tests, C tests, differential
#                   tests against PyTorch, examples, and the C and differential tests under ASan+UBSan
#   make bench      benchmarks (never part of test)
#   make install PREFIX=/usr/local DESTDIR=

VERSION := 0.1.0
SOVERSION := 0
PREFIX ?= /usr/local
PYTHON ?= python3
CC ?= gcc
BUILD ?= build

ifeq ($(V),1)
Q :=
QUIET_CC =
QUIET_LINK =
QUIET_GEN =
else
Q := @
QUIET_CC = @printf '  CC      %s\n' $@;
QUIET_LINK = @printf '  LINK    %s\n' $@;
QUIET_GEN = @printf '  GEN     %s\n' $@;
endif

# Debian's BLIS built without threads: yaten's kernel pool (runtime/parallel.c) is the only pool,
# and the BLIS path splits its products over it.
BLIS_INC := /usr/include/x86_64-linux-gnu/blis-serial
BLIS_LIB := /usr/lib/x86_64-linux-gnu/blis-serial

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
# -falign-loops=32: a loop of up to 32 bytes never straddles a 64-byte line of code. GCC's 16
# left some of the generated loops straddling one as the rest of the library moved them about,
# and on Zen 4 such a loop ran at half speed: a *= 1 on [65, 1000] f32, one thread, the same
# machine code of mul_scalar_loop_f32 at 48 bytes into a line 4.48 us a call, line-aligned 2.29.
OPT ?= -O2 -march=x86-64-v3 -mtune=native -falign-loops=32
# -fopenmp-simd: the `omp simd` loops vectorise; nothing links or starts OpenMP's runtime.
# -mtls-dialect=gnu2: thread-locals (error, grad mode, allocator cache) through TLS descriptors,
# which for a library loaded at start-up are an offset load, not a __tls_get_addr call (that call
# was 18 % of yt_add on 1-element tensors through libyaten.so); dlopen still works. Where the
# compiler has it (GCC; clang from 19).
TLS_DIALECT := $(shell $(CC) -mtls-dialect=gnu2 -fPIC -x c -c /dev/null -o /dev/null 2>/dev/null \
                 && echo -mtls-dialect=gnu2)
# Debug information: full for the normal build; the sanitizer build (test-asan) keeps line tables only.
DEBUG ?= -g
CFLAGS_BASE := -std=c11 $(WARN) $(OPT) $(DEBUG) -fPIC -fopenmp-simd -fvisibility=hidden -D_GNU_SOURCE \
               $(TLS_DIALECT)
CPPFLAGS_LIB := -Iinclude -Igenerated/include -Iruntime -Igenerated -Ikernels/cpu -I$(BLIS_INC) \
                -DYT_BUILDING_LIBRARY
SAN_FLAGS :=
# Calls between the library's own public functions (yt_release, yt_dtype_size, ...) bind inside it
# at link time, not through the PLT: no program replaces them.
LDFLAGS_SHARED := -Wl,-Bsymbolic-functions
CFLAGS += $(CFLAGS_BASE) $(SAN_FLAGS)
LDLIBS_LIB := -L$(BLIS_LIB) -Wl,-rpath,$(BLIS_LIB) -lblis -ljansson -lz -lm -lpthread

# nn/ (modules, optimizers, data, serialization) is built on the public API, in the same library.
LIB_SRC := $(sort $(wildcard runtime/*.c runtime/autograd/*.c kernels/cpu/*.c kernels/composite/*.c)) \
           $(sort $(wildcard generated/*.c)) $(sort $(wildcard nn/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)

STATIC_LIB := $(BUILD)/libyaten.a
SHARED_LIB := $(BUILD)/libyaten.so.$(VERSION)
SHARED_SONAME := libyaten.so.$(SOVERSION)

# The `yaten` command: tools/main.c plus the rest of tools/, which the CLI tests link too.
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/%.o)
TOOL_LIB_OBJ := $(filter-out $(BUILD)/tools/main.o,$(TOOL_OBJ))
YATEN_CLI := $(if $(TOOL_SRC),$(BUILD)/yaten)
LDLIBS_TOOL := -lyaml

EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLES := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)

# C unit tests: every tests/unit/test_*.c and the per-op cases generated from ops.yaml link into
# one Criterion binary (each test still runs in a process of its own). One binary per file linked
# the whole library into each: 36 copies, 1.3 GB in build/ and 9.7 GB in build-asan/.
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
OP_CASES_OBJ := $(BUILD)/generated/tests/op_cases.o
UNIT_TESTS := $(BUILD)/tests/unit_tests
CPPFLAGS_TEST := -Iinclude -Igenerated/include -Itests/unit

BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCHES := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

comma := ,
GEN_DEPS := ops.yaml derivatives.yaml .clang-format $(wildcard codegen/*.py codegen/templates/*.j2)

.PHONY: all lib generate check-generated check-no-openmp deps deps-test deps-bench deps-demo demo test test-unit test-diff \
        test-nn test-optim test-io test-cli test-codegen test-examples test-shared test-asan fuzz bench install uninstall clean \
        format check-format
.DEFAULT_GOAL := all

all: lib $(BUILD)/yaten.pc $(EXAMPLES) $(YATEN_CLI)
lib: $(STATIC_LIB) $(BUILD)/libyaten.so

# ---- set-up: missing Debian packages are installed when root (scripts/deps.sh)
deps:
	$(Q)scripts/deps.sh build
deps-test:
	$(Q)scripts/deps.sh test
deps-demo:
	$(Q)scripts/deps.sh demo

# ---- code generation: the generator's own files are dependencies; outputs are written only
# when their content changes, so an edit rebuilds only what it touched.
generate: $(BUILD)/gen.stamp
$(BUILD)/gen.stamp: $(GEN_DEPS)
	@mkdir -p $(@D)
	$(QUIET_GEN)$(PYTHON) codegen/gen.py && touch $@

check-generated:
	$(Q)rm -rf $(BUILD)/check-gen && mkdir -p $(BUILD)/check-gen
	$(Q)$(PYTHON) codegen/gen.py --out $(BUILD)/check-gen >/dev/null
	$(Q)diff -r generated $(BUILD)/check-gen/generated && diff docs/ops.md $(BUILD)/check-gen/docs/ops.md \
	  || { echo "generated/ is stale: run 'make generate' and commit the result" >&2; exit 1; }
	@echo "  OK      generated/ matches ops.yaml and derivatives.yaml"

# ---- library
$(BUILD)/%.o: %.c $(BUILD)/gen.stamp
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(CPPFLAGS_LIB) $(CFLAGS) -Wmissing-prototypes -MMD -MP -c $< -o $@

# Pointwise loops: errno and FP-trap semantics would keep sqrt and rounding from vectorising.
$(BUILD)/generated/kernels_pointwise_%.o: CFLAGS += -fno-math-errno -fno-trapping-math
$(BUILD)/nn/optim_loops.o: CFLAGS += -fno-math-errno -fno-trapping-math
# The packed traversal's transposing copy (runtime/pointwise.c) took 1.05-1.1x as long when its
# inner loop began 16 or 32 bytes past a 64-byte boundary, as it may after any edit of the file.
$(BUILD)/runtime/pointwise.o: CFLAGS += -falign-loops=64

$(STATIC_LIB): $(LIB_OBJ)
	@rm -f $@
	$(QUIET_LINK)ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(QUIET_LINK)$(CC) -shared -Wl,-soname,$(SHARED_SONAME) $(LDFLAGS_SHARED) $(SAN_FLAGS) -o $@ $^ $(LDLIBS_LIB)

$(BUILD)/libyaten.so: $(SHARED_LIB)
	$(Q)ln -sf libyaten.so.$(VERSION) $(BUILD)/$(SHARED_SONAME)
	$(Q)ln -sf libyaten.so.$(VERSION) $@

$(BUILD)/yaten.pc: yaten.pc.in Makefile
	@mkdir -p $(@D)
	$(QUIET_GEN)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	  -e 's|@BLIS_LIB@|$(BLIS_LIB)|' $< > $@

# tools/ objects: the library's flags, plus -Itools for the CLI's own headers.
$(BUILD)/tools/%.o: tools/%.c $(BUILD)/gen.stamp
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(CPPFLAGS_TEST) -Itools $(CFLAGS) -fvisibility=default -MMD -MP -c $< -o $@

# The embedded default config is examples/fashion_cnn.yaml itself (.incbin), which -MMD cannot see.
$(BUILD)/tools/default_config.o: examples/fashion_cnn.yaml

$(BUILD)/yaten: $(TOOL_OBJ) $(STATIC_LIB)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(TOOL_OBJ) -o $@ $(STATIC_LIB) $(LDLIBS_TOOL) $(LDLIBS_LIB)

# Programs link the static library, so they run from the build tree without LD_LIBRARY_PATH.
$(BUILD)/examples/%: examples/%.c $(STATIC_LIB)
	@mkdir -p $(@D)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_TEST) $(CFLAGS) -fvisibility=default $< -o $@ $(STATIC_LIB) $(LDLIBS_LIB)

# ---- the main job
demo: deps-demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(BUILD)/yaten train

# ---- tests
test: deps-test
	$(Q)$(MAKE) --no-print-directory check-generated
	$(Q)$(MAKE) --no-print-directory check-format
	$(Q)$(MAKE) --no-print-directory check-no-openmp
	$(Q)$(MAKE) --no-print-directory test-codegen
	$(Q)$(MAKE) --no-print-directory test-unit
	$(Q)$(MAKE) --no-print-directory test-diff
	$(Q)$(MAKE) --no-print-directory test-nn
	$(Q)$(MAKE) --no-print-directory test-optim
	$(Q)$(MAKE) --no-print-directory test-io
	$(Q)$(MAKE) --no-print-directory test-cli
	$(Q)$(MAKE) --no-print-directory test-examples
	$(Q)$(MAKE) --no-print-directory test-shared
	$(Q)$(MAKE) --no-print-directory test-asan

# yaten's kernel pool is its only thread pool: neither the library nor the command may need
# OpenMP's runtime (libgomp, directly or through BLIS), nor may an object call into it.
check-no-openmp: lib $(YATEN_CLI)
	$(Q)! ldd $(BUILD)/libyaten.so $(YATEN_CLI) | grep libgomp || \
	  { echo "libyaten.so or yaten links libgomp: build with -fopenmp-simd and a serial BLIS" >&2; exit 1; }
	$(Q)! nm -u $(STATIC_LIB) | grep -E ' (GOMP_|omp_)' || \
	  { echo "libyaten.a calls OpenMP's runtime (above)" >&2; exit 1; }
	@echo "  OK      libyaten.so and yaten do not link libgomp"

# pytest from whichever Python has it (Debian's python3-pytest installs it for /usr/bin/python3).
PYTEST := $(shell for p in $(PYTHON) /usr/bin/python3; do \
            $$p -c 'import pytest, jinja2, yaml' 2>/dev/null && { echo $$p; break; }; done)
# The end-to-end generator test compiles a fixture against the library's objects: build them first,
# so it runs (it skips only when pytest is run by hand without a build).
test-codegen: lib
	$(Q)test -n "$(PYTEST)" || { echo "no Python with pytest, jinja2 and yaml: run make deps-test" >&2; exit 1; }
	$(Q)$(PYTEST) -m pytest -q -p no:cacheprovider tests/codegen

# Test programs outside tests/unit/: their own sources linked with the library (no Criterion); the
# Python tests beside them drive them and compare with PyTorch.
#   diff_runner         every per-op case from ops.yaml (tests/diff/)
#   nn_runner           nn modules against torch.nn (tests/nn/)
#   optim_runner        optimizers and schedulers against torch.optim (tests/optim/)
#   optim_train_runner  the differential training test: an MLP and a CNN from yaten's initial
#                       weights (safetensors) on batches from .npy files (tests/optim/)
#   io_roundtrip        safetensors and .npy files crossing with PyTorch and NumPy (tests/io/)
TEST_PROGRAMS := $(addprefix $(BUILD)/tests/,diff_runner nn_runner optim_runner optim_train_runner io_roundtrip)
$(BUILD)/tests/diff_runner: tests/diff/runner.c $(OP_CASES_OBJ)
$(BUILD)/tests/nn_runner: tests/nn/runner.c
$(BUILD)/tests/optim_runner: tests/optim/runner.c
$(BUILD)/tests/optim_train_runner: tests/optim/train_runner.c
$(BUILD)/tests/io_roundtrip: tests/io/roundtrip.c
$(TEST_PROGRAMS): $(STATIC_LIB)
	@mkdir -p $(@D)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_TEST) $(CFLAGS) -fvisibility=default $(filter %.c %.o,$^) -o $@ \
	  $(STATIC_LIB) $(LDLIBS_LIB)

# The Python that runs the tests against PyTorch (/usr/bin/python3 has Debian's python3-torch), and
# a check that it has the modules $(1) (comma-separated) before a test starts.
TORCH_PYTHON ?= /usr/bin/python3
require_python = $(TORCH_PYTHON) -c 'import $(1)' 2>/dev/null || \
  { echo "$(TORCH_PYTHON) lacks one of $(1): run make deps-test" >&2; exit 1; }

# Every per-op case from ops.yaml, in every dtype the op takes: forward values, result dtypes and
# input gradients.
test-diff: $(BUILD)/tests/diff_runner
	$(Q)$(call require_python,torch$(comma) numpy$(comma) pytest)
	$(Q)YT_DIFF_RUNNER=$(BUILD)/tests/diff_runner $(TORCH_PYTHON) -m pytest -q -p no:cacheprovider tests/diff $(ARGS)

# nn modules: the same weights, inputs and upstream gradient through both; outputs, gradients and
# running statistics must agree.
test-nn: $(BUILD)/tests/nn_runner
	$(Q)$(call require_python,torch$(comma) numpy$(comma) pytest)
	$(Q)YT_NN_RUNNER=$(BUILD)/tests/nn_runner $(TORCH_PYTHON) -m pytest -q -p no:cacheprovider tests/nn $(ARGS)

# Optimizers (50 steps, every option) and schedulers (100 steps) against torch.optim, and the
# first 50 training steps of an MLP and a CNN (SGD with momentum, Adam) against PyTorch's.
test-optim: $(BUILD)/tests/optim_runner $(BUILD)/tests/optim_train_runner
	$(Q)$(call require_python,torch$(comma) numpy$(comma) pytest)
	$(Q)YT_OPTIM_RUNNER=$(BUILD)/tests/optim_runner YT_OPTIM_TRAIN_RUNNER=$(BUILD)/tests/optim_train_runner \
	  $(TORCH_PYTHON) -m pytest -q -p no:cacheprovider tests/optim $(ARGS)

# Serialization: safetensors and .npy files cross both ways with PyTorch and NumPy.
test-io: $(BUILD)/tests/io_roundtrip
	$(Q)$(call require_python,torch$(comma) numpy$(comma) pytest)
	$(Q)YT_IO_ROUNDTRIP=$(BUILD)/tests/io_roundtrip $(TORCH_PYTHON) -m pytest -q -p no:cacheprovider \
	  tests/io $(ARGS)

# Unit tests also see the library's internal headers: some drive its test hooks (instruction-set
# caps, cache sizes, the thread switches) and kernels below the public API. The CLI's tests link
# the yaten command's objects (tools/ but main.o) and libyaml. op_cases.c is compiled once, for
# this binary and diff_runner.
CPPFLAGS_UNIT := $(CPPFLAGS_TEST) -Iruntime -Ikernels/cpu -Itools
$(TEST_OBJ) $(OP_CASES_OBJ): $(BUILD)/%.o: %.c $(BUILD)/gen.stamp
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(CPPFLAGS_UNIT) $(CFLAGS) -fvisibility=default -MMD -MP -c $< -o $@

$(UNIT_TESTS): $(TEST_OBJ) $(OP_CASES_OBJ) $(TOOL_LIB_OBJ) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(QUIET_LINK)$(CC) $(CFLAGS) $(TEST_OBJ) $(OP_CASES_OBJ) $(TOOL_LIB_OBJ) -o $@ \
	  $(STATIC_LIB) -lcriterion $(LDLIBS_TOOL) $(LDLIBS_LIB)

# Every suite; `make test-unit ARGS='--filter conv2d/*'` runs one suite.
test-unit: $(UNIT_TESTS)
	$(Q)echo "  TEST    $(UNIT_TESTS)" && $(UNIT_TESTS) $(ARGS)

# The yaten command as a user runs it (tests/cli/): help and usage errors, `ops` against ops.yaml,
# config errors, its weights in PyTorch, Ctrl-C and resume, the progress bar, the plot.
test-cli: $(YATEN_CLI)
	$(Q)$(call require_python,torch$(comma) numpy$(comma) pytest$(comma) yaml)
	$(Q)YATEN=$(BUILD)/yaten $(TORCH_PYTHON) -m pytest -q -p no:cacheprovider tests/cli $(ARGS)

# The examples must build and succeed (mlp_synthetic fails unless its loss falls, fashion_mlp
# unless it reaches 80% test accuracy).
# They run in a temporary folder, since some write files (fashion_mlp saves its weights).
test-examples: $(EXAMPLES)
	$(Q)tmp=$$(mktemp -d) && for e in $(EXAMPLES); do echo "  RUN     $$e"; \
	  (cd $$tmp && $(CURDIR)/$$e >/dev/null) || { echo "$$e failed" >&2; rm -rf $$tmp; exit 1; }; \
	done; rm -rf $$tmp

# libyaten.so itself (every other program links the static library): linked at start-up, and a
# copy loaded by dlopen beside it, each on two threads (tests/shared/shared_lib.c).
$(BUILD)/tests/shared_lib: tests/shared/shared_lib.c $(BUILD)/libyaten.so
	@mkdir -p $(@D)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_TEST) $(CFLAGS) -fvisibility=default $< -o $@ \
	  -L$(BUILD) -Wl,-rpath,$(abspath $(BUILD)) -lyaten -ldl -lpthread

test-shared: $(BUILD)/tests/shared_lib
	$(Q)tmp=$$(mktemp -d) && cp $(SHARED_LIB) $$tmp/libyaten_copy.so && \
	  $(BUILD)/tests/shared_lib $$tmp/libyaten_copy.so; status=$$?; rm -rf $$tmp; exit $$status
	@echo "  OK      libyaten.so linked and loaded by dlopen"

# Second stage: the same C tests under AddressSanitizer + UndefinedBehaviorSanitizer. The library
# answers an allocation it cannot get with an error, and the sweeps of bad arguments ask for
# terabytes (tests/unit/test_ops.c): ASan must return NULL for them as malloc does, not abort.
# Line tables (-g1) are all the reports need; full debug information doubled the objects' size.
test-asan:
	$(Q)ASAN_OPTIONS=allocator_may_return_null=1 $(MAKE) --no-print-directory BUILD=build-asan \
	  OPT='-O1 -march=x86-64-v3' DEBUG=-g1 \
	  SAN_FLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined' \
	  test-unit test-diff test-nn test-optim test-io test-cli

# ---- benchmarks (never part of test)
TORCH_BENCHES := $(BUILD)/bench/overhead_torch $(BUILD)/bench/train_torch
bench: deps-bench $(BENCHES) $(TORCH_BENCHES) $(YATEN_CLI)
	$(Q)bench/overhead.sh $(BUILD)
	$(Q)bench/gemm.sh $(BUILD)
	$(Q)bench/pointwise.sh $(BUILD)
	$(Q)bench/strided.sh $(BUILD)
	$(Q)bench/streaming.sh $(BUILD)
	$(Q)bench/reduce.sh $(BUILD)
	$(Q)bench/conv.sh $(BUILD)
	$(Q)bench/norm.sh $(BUILD)
	$(Q)bench/threads.sh $(BUILD)
	$(Q)bench/train.sh $(BUILD)
	$(Q)bench/demo.sh $(BUILD)

deps-bench:
	$(Q)scripts/deps.sh bench

$(BUILD)/bench/%_torch: bench/%_torch.cpp
	@mkdir -p $(@D)
	$(QUIET_LINK)g++ -std=c++17 -O2 -I/usr/include/torch/csrc/api/include $< -o $@ \
	  -ltorch -ltorch_cpu -lc10

# bench/gemm.c calls BLIS directly beside yaten.
$(BUILD)/bench/gemm: CPPFLAGS_TEST += -I$(BLIS_INC)
# compiled and linked in one step; -MMD writes $@.d, so an edited bench/*.h rebuilds it too
$(BUILD)/bench/%: bench/%.c $(STATIC_LIB)
	@mkdir -p $(@D)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_TEST) $(CFLAGS) -fvisibility=default -MMD -MP $< -o $@ \
	  $(STATIC_LIB) $(LDLIBS_LIB)

# ---- install
install: lib $(BUILD)/yaten.pc
	install -d $(DESTDIR)$(PREFIX)/include/yaten $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/yaten.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/yaten/*.h generated/include/yaten/ops.h $(DESTDIR)$(PREFIX)/include/yaten/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libyaten.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SHARED_SONAME)
	ln -sf libyaten.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libyaten.so
	install -m 644 $(BUILD)/yaten.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/yaten $(DESTDIR)$(PREFIX)/include/yaten.h
	rm -f $(DESTDIR)$(PREFIX)/lib/libyaten.* $(DESTDIR)$(PREFIX)/lib/pkgconfig/yaten.pc

# ---- formatting of hand-written C (generated/ is formatted by the generator)
FORMAT_SRC = $(shell git ls-files '*.c' '*.h' | grep -v '^generated/')
format:
	$(Q)clang-format-14 -i $(FORMAT_SRC)
check-format:
	$(Q)clang-format-14 --dry-run -Werror $(FORMAT_SRC)
	@echo "  OK      hand-written C is clang-formatted"

clean:
	rm -rf build build-asan

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(OP_CASES_OBJ:.o=.d) $(BENCHES:=.d)
