# warble: GNU Make build. `make` builds the libraries and the CLI; `make test` runs the whole suite
# (unit tests under ASan+UBSan, the PTX gate for every architecture, the GPU ledger check).

PREFIX  ?= /usr/local
CC      ?= cc
CUDA    ?= $(firstword $(wildcard /usr/local/cuda) /usr/local/cuda)
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)

SOVERSION := 0
VERSION   := 0.1.0

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
ALLFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden -DWB_BUILDING \
            -Iinclude -I.
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

LIB_SRC  := $(sort $(wildcard dsl/*.c lower/*.c emit/*.c runtime/*.c))
LIB_HDR  := $(wildcard include/*.h include/warble/*.h dsl/*.h lower/*.h emit/*.h runtime/*.h tools/*.h dsl/*.def lower/*.def)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
EX_SRC   := $(sort $(wildcard examples/*.c))

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
TESTS    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
EXAMPLES := $(EX_SRC:examples/%.c=$(BUILD)/examples/%)

all: $(BUILD)/libwarble.a $(BUILD)/libwarble.so $(BUILD)/warble $(EXAMPLES)

$(BUILD)/obj/%.o: %.c $(LIB_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -c $< -o $@

$(BUILD)/libwarble.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libwarble.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libwarble.so.$(SOVERSION) -o $(BUILD)/libwarble.so.$(VERSION) $^ -ldl -lm -lpthread
	ln -sf libwarble.so.$(VERSION) $(BUILD)/libwarble.so.$(SOVERSION)
	ln -sf libwarble.so.$(SOVERSION) $@

$(BUILD)/warble: $(TOOL_OBJ) $(BUILD)/libwarble.a
	$(CC) $(ALLFLAGS) -o $@ $(TOOL_OBJ) $(BUILD)/libwarble.a -ldl -lm -lpthread

$(BUILD)/examples/%: examples/%.c $(BUILD)/libwarble.a include/warble.h
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -o $@ $< $(BUILD)/libwarble.a -ldl -lm -lpthread

$(BUILD)/tests/%: tests/%.c $(wildcard tests/*.h) $(BUILD)/libwarble.a
	@mkdir -p $(dir $@)
	$(CC) $(ALLFLAGS) -o $@ $(filter %.c,$^) $(BUILD)/libwarble.a $(CHECK_LIBS) -ldl -lm -lpthread

# Tests that run kernels on the CPU interpreter of the instruction IR link its source too.
$(BUILD)/tests/test_w8a8_cpu: tests/interp.c

# Unit tests (Check), built and run under ASan+UBSan in their own build tree.
unit: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; CK_VERBOSITY=normal $$t; done

asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g $(SANITIZE)" LDFLAGS="$(SANITIZE)" unit

# The PTX gate: every kernel of the catalog on every architecture through ptxas (parallel).
ptx-gate: $(BUILD)/warble
	WARBLE=$(BUILD)/warble JOBS=$(JOBS) tests/ptx_gate.sh

# Every golden sm_90a kernel must have been validated on a GPU (tests/gpu/ledger.tsv).
ledger-check: $(BUILD)/warble
	WARBLE=$(BUILD)/warble tests/ledger_check.sh

# Command-line contract tests (exit codes, one-line errors, interchange file checks); no GPU needed.
cli-test: $(BUILD)/warble
	WARBLE=$(BUILD)/warble tests/cli_test.sh

test: all asan cli-test ptx-gate ledger-check
	@echo "make test: all parts passed"

selftest: all
	$(BUILD)/warble selftest

# On a GPU machine with PyTorch: the BENCH.md suite beside torch (JSON, markdown, plots under $$OUT);
# without PyTorch: warble's own event-timed bench of W4A16.
bench: all
	@if python3 -c "import torch" 2>/dev/null; then scripts/h200.sh bench; \
	else $(BUILD)/warble bench w4a16 --m 1,16,256,4096 --n 8192 --k 8192; fi

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/warble.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libwarble.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libwarble.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libwarble.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libwarble.so.$(SOVERSION)
	ln -sf libwarble.so.$(SOVERSION) $(DESTDIR)$(PREFIX)/lib/libwarble.so
	install -m 755 $(BUILD)/warble $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' warble.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/warble.pc

clean:
	rm -rf build build-asan

.PHONY: all unit asan cli-test ptx-gate ledger-check test selftest bench install clean
.SECONDARY:
