# make fuzz: a libFuzzer target per reader (tests/fuzz/fuzz_*.c: IDX plain and gzip,
# CIFAR-10, an image-folder image, the checkpoint decoder, a text corpus), built with clang and
# AddressSanitizer + UndefinedBehaviorSanitizer, each run for FUZZ_SECONDS, starting from
# the files the unit tests write (tests/fuzz/seed.h). Not part of make test. Needs clang
# and its fuzzer runtime (Debian: clang, libclang-rt-14-dev, libomp-14-dev).
#   make fuzz                      # 60 s per target
#   make fuzz FUZZ_SECONDS=5       # a quick look
#   make fuzz FUZZ_TARGETS=ckpt    # one target
# New inputs that reach new code are kept in build/fuzz/corpus/<target>/ (and used again
# next time); a crash, leak or hang is written to build/fuzz/findings/.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS ?= idx idx_gz cifar10 ckpt text $(if $(HAVE_STB),image)
FUZZ_BINS     = $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer $(WARN) -Ilib -Itests \
                $(filter -DHAVE_ZLIB -DHAVE_STB,$(CFLAGS)) -fsanitize=fuzzer $(FUZZ_SAN)
# The unit tests whose files become seeds.
FUZZ_SEEDERS := $(BUILD)/tests/test_data $(BUILD)/tests/test_image_folder \
                $(BUILD)/tests/test_checkpoint $(BUILD)/tests/test_text

.PHONY: fuzz fuzz-build fuzz-seeds fuzz-force

# The library with coverage for libFuzzer and the sanitizers, by the rules above: CPU
# only, without the optional parts no reader uses (MPI, Box2D, giflib), its own build
# directory, rebuilt when a flag or a file changes. (-Wno-pass-failed: under the
# sanitizers clang cannot vectorise some `omp simd` loops, and says so.)
$(FUZZ_BUILD)/libcourse.a: fuzz-force
	@command -v $(FUZZ_CC) >/dev/null || { echo "error: make fuzz needs $(FUZZ_CC) (sudo apt-get install clang libclang-rt-14-dev libomp-14-dev, or sudo make deps)" >&2; exit 1; }
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) NVCC= CC=$(FUZZ_CC) HAVE_MPI= HAVE_BOX2D= HAVE_GIF= \
	  OPT="-O1 -g -fno-omit-frame-pointer -Wno-pass-failed -fsanitize=fuzzer-no-link $(FUZZ_SAN)" $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_BUILD)/libcourse.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_BUILD)/libcourse.a $(LDLIBS) -o $@

fuzz-build: $(FUZZ_BINS) ## build the fuzz targets (clang, libFuzzer, ASan + UBSan)

fuzz-seeds: $(FUZZ_SEEDERS) ## the unit tests write their files as fuzz seeds into build/fuzz/seeds/
	@rm -rf $(FUZZ_BUILD)/seeds && mkdir -p $(FUZZ_BUILD)/seeds
	@for t in $(FUZZ_SEEDERS); do FUZZ_SEED_DIR=$(CURDIR)/$(FUZZ_BUILD)/seeds $$t >/dev/null 2>&1 || \
	  { echo "error: $$t failed while writing seeds: run it alone" >&2; exit 1; }; done
	@for k in $(FUZZ_TARGETS); do mkdir -p $(FUZZ_BUILD)/seeds/$$k; \
	  printf '  seeds %-8s %s files\n' $$k "$$(ls $(FUZZ_BUILD)/seeds/$$k | wc -l)"; done

fuzz: fuzz-build fuzz-seeds ## run each fuzz target for FUZZ_SECONDS (default 60) from the unit tests' files
	@tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-force:
