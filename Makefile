# The one entry point of the workshop toolkit. `make help` lists the targets.
#
# Optional parts are detected, never required: each prints one line saying whether
# it was found and what is lost without it. `make deps` (as root) installs them.

SHELL := /bin/bash
.DEFAULT_GOAL := all

CC      ?= cc
ARCH    ?= native
OPT     ?= -O3
# Warnings are errors in CI (.ci/run sets WERROR=-Werror); a participant's build
# shows them without stopping.
WERROR  ?=
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes $(WERROR)
# -ffp-contract=fast: C11 mode would otherwise forbid fusing a*b+c into one FMA.
# -fno-math-errno: no code reads errno after sqrtf, and a call that may set it is a
# branch that keeps a loop scalar (Adam's update ran at 11 cycles an element); the
# results are the same bits.
CFLAGS  := -std=c11 -D_GNU_SOURCE -DCOURSE_ROOT='"$(CURDIR)"' $(OPT) -march=$(ARCH) \
           -ffp-contract=fast -fno-math-errno -fopenmp $(WARN) -Ilib -Itests
# -ldl: dlopen (core/gpu_counters.c loads NVML at run time), in libc itself from glibc 2.34
LDLIBS  := -fopenmp -lm -ldl $(LDEXTRA)   # LDEXTRA: e.g. the sanitizers' runtime
BUILD   := build
PYTHON  ?= /usr/bin/python3

# ---------------------------------------------------------------- detection
HASH := \#
, := ,
try_link = $(shell printf '$(1)\nint main(void){return 0;}\n' | \
             $(CC) -x c - $(2) -o /dev/null >/dev/null 2>&1 && echo yes)

BLAS_FLAGS := $(shell pkg-config --cflags --libs openblas 2>/dev/null || echo -lopenblas)
HAVE_BLAS  := $(call try_link,$(HASH)include <cblas.h>,$(BLAS_FLAGS))
HAVE_ZLIB  := $(call try_link,$(HASH)include <zlib.h>,-lz)
HAVE_STB   := $(call try_link,$(HASH)include <stb/stb_image.h>,)
HAVE_GIF   := $(call try_link,$(HASH)include <gif_lib.h>,-lgif)
# Box2D 2.4 (C++; 3.x is a different, C API): LunarLander-v3 in lib/rl/
HAVE_BOX2D := $(shell printf '$(HASH)include <box2d/box2d.h>\nint main(){b2World w(b2Vec2(0.0f$(,)-10.0f));return 0;}\n' | \
                $(CXX) -x c++ - -lbox2d -o /dev/null >/dev/null 2>&1 && echo yes)
HAVE_MPI   := $(shell command -v mpicc >/dev/null 2>&1 && echo yes)
# Open MPI's flags from its compiler wrapper: lib/dist/dist_mpi.c is compiled with them,
# and programs link libmpi (--as-needed: only those that call it load it).
MPI_CFLAGS := $(if $(HAVE_MPI),$(shell mpicc --showme:compile 2>/dev/null))
MPI_LIBS   := $(if $(HAVE_MPI),$(shell mpicc --showme:link 2>/dev/null))
HAVE_UNIFDEF := $(shell command -v unifdef >/dev/null 2>&1 && echo yes)
# Debian ships the files gzipped: usable only with zlib.
HAVE_FMNIST := $(and $(HAVE_ZLIB),$(shell test -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz && echo yes))
# '=': asked only by the targets that print it (importing torch takes seconds)
HAVE_TORCH = $(shell $(PYTHON) -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' >/dev/null 2>&1 && echo yes)

# CUDA: nvcc under CUDA_HOME (or on PATH). `make NVCC=` builds CPU-only on purpose.
# CUDA_ARCH: the GPU generations to compile machine code (SASS) for; PTX of the last
# one is added, which newer GPUs compile at load time. 80: A100, 90: H100/H200.
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
CUDA_ARCH ?= 80 90
HAVE_CUDA := $(if $(NVCC),$(shell $(NVCC) --version >/dev/null 2>&1 && \
               test -r $(CUDA_HOME)/include/cublas_v2.h && echo yes))
CUDA_VERSION := $(if $(HAVE_CUDA),$(shell $(NVCC) --version | sed -nE 's/.*release ([0-9.]+).*/\1/p'))
CUDA_GENCODE := $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
                -gencode arch=compute_$(lastword $(CUDA_ARCH)),code=compute_$(lastword $(CUDA_ARCH))
# Warnings are errors in CI for .cu files too: nvcc's own (-Werror all-warnings)
# and the host compiler's.
NVCCFLAGS = -std=c++17 -O3 $(CUDA_GENCODE) -Ilib -Itests -DHAVE_CUDA \
            -Xcompiler -Wall,-Wextra,-fopenmp $(if $(WERROR),-Werror all-warnings -Xcompiler -Werror)

# NCCL (GPU collectives): in the CUDA toolkit on these machines, or NVIDIA's HPC SDK.
HAVE_NCCL := $(if $(HAVE_CUDA),$(shell test -r $(CUDA_HOME)/include/nccl.h && \
               ls $(CUDA_HOME)/lib64/libnccl.so* >/dev/null 2>&1 && echo yes))

ifeq ($(HAVE_CUDA),yes)
  CFLAGS += -DHAVE_CUDA -isystem $(CUDA_HOME)/include
  # --as-needed: programs that never touch the GPU do not load the CUDA libraries
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
            -Wl,--push-state,--as-needed -lcublas -lcudart -lstdc++ -Wl,--pop-state
endif

ifeq ($(HAVE_NCCL),yes)
  CFLAGS += -DHAVE_NCCL
  NVCCFLAGS += -DHAVE_NCCL
  LDLIBS += -Wl,--push-state,--as-needed -lnccl -Wl,--pop-state
endif
ifeq ($(HAVE_MPI),yes)
  CFLAGS += -DHAVE_MPI
  LDLIBS += -Wl,--push-state,--as-needed $(MPI_LIBS) -Wl,--pop-state
endif

ifeq ($(HAVE_BLAS),yes)
  CFLAGS += -DHAVE_CBLAS $(filter -I%,$(BLAS_FLAGS))
  LDLIBS += $(filter -L% -l%,$(BLAS_FLAGS))
endif
ifeq ($(HAVE_STB),yes)
  CFLAGS += -DHAVE_STB
endif
ifeq ($(HAVE_GIF),yes)
  CFLAGS += -DHAVE_GIF
  LDLIBS += -Wl,--push-state,--as-needed -lgif -Wl,--pop-state
endif
ifeq ($(HAVE_BOX2D),yes)
  CFLAGS += -DHAVE_BOX2D
  LDLIBS += -Wl,--push-state,--as-needed -lbox2d -lstdc++ -Wl,--pop-state
endif
# C++ (lib/*/*.cpp: the Box2D glue): the C flags less the C-only ones
CXXFLAGS = $(filter-out -std=c11 -Wstrict-prototypes -Wmissing-prototypes,$(CFLAGS)) -std=c++17
ifeq ($(HAVE_ZLIB),yes)
  CFLAGS += -DHAVE_ZLIB
  LDLIBS += -lz
endif

found = $(if $(1),found    ,not found)
define REPORT
optional parts:
  OpenBLAS (cblas)  $(call found,$(HAVE_BLAS)) $(if $(HAVE_BLAS),GEMM through OpenBLAS,GEMM uses the library's own blocked code (slower))
  zlib              $(call found,$(HAVE_ZLIB)) $(if $(HAVE_ZLIB),reads .gz data sets,only uncompressed IDX files can be read)
  stb_image         $(call found,$(HAVE_STB)) $(if $(HAVE_STB),reads image folders (PNG$(,) JPEG$(,) BMP...) and writes PNG strips of episodes,no --dataset folder (images in class folders)$(,) no PNG strips of episodes)
  giflib            $(call found,$(HAVE_GIF)) $(if $(HAVE_GIF),episodes as animated GIFs (--gif),no animated GIFs of episodes (--gif): sudo apt-get install libgif-dev)
  Box2D 2.4         $(call found,$(HAVE_BOX2D)) $(if $(HAVE_BOX2D),LunarLander-v3 (--env lunarlander),no LunarLander (--env lunarlander): sudo apt-get install libbox2d-dev)
  Open MPI          $(call found,$(HAVE_MPI)) $(if $(HAVE_MPI),the mpi backend of lib/dist: CPU ranks for lessons 06 and 07,no CPU ranks: lessons 06 and 07 run one process)
  NCCL              $(call found,$(HAVE_NCCL)) $(if $(HAVE_NCCL),the nccl backend of lib/dist: GPU collectives,no nccl backend: GPU ranks cannot talk (mpi moves host copies only))
  Fashion-MNIST     $(call found,$(HAVE_FMNIST)) $(if $(HAVE_FMNIST),/usr/share/datasets/fashion-mnist,demo trains on the synthetic set instead)
  unifdef           $(call found,$(HAVE_UNIFDEF)) $(if $(HAVE_UNIFDEF),make lessons can regenerate lessons/,make lessons and its sync check cannot run)
  PyTorch (python3) $(call found,$(HAVE_TORCH)) $(if $(HAVE_TORCH),make bench compares with PyTorch,make bench runs without the PyTorch column)
  CUDA (nvcc)       $(call found,$(HAVE_CUDA)) $(if $(HAVE_CUDA),CUDA $(CUDA_VERSION) in $(CUDA_HOME)$(,) code for $(addprefix sm_,$(CUDA_ARCH)): --device cuda works on a GPU node,CPU-only build: no --device cuda$(,) GPU checks skip (set CUDA_HOME)$(,) lessons 00/02 run their CPU part)
  (sudo make deps installs all of them)
endef

# ---------------------------------------------------------------- library
LIB_SRC := $(sort $(wildcard lib/*/*.c))
LIB_CU  := $(if $(HAVE_CUDA),$(sort $(wildcard lib/*/*.cu)))
LIB_CPP := $(if $(HAVE_BOX2D),$(sort $(wildcard lib/*/*.cpp)))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(LIB_CU:%.cu=$(BUILD)/obj/%.o) $(LIB_CPP:%.cpp=$(BUILD)/obj/%.o)
LIB     := $(BUILD)/libcourse.a
FRAMEWORK_OBJ := $(BUILD)/obj/tests/framework/check.o $(BUILD)/obj/tests/framework/gradcheck.o \
                 $(BUILD)/obj/tests/framework/tensors.o

# A stamp named after the flags: when a flag changes (an optional part appears,
# ARCH=...), every object is rebuilt.
FLAGS_STAMP := $(BUILD)/flags-$(shell echo '$(CC) $(CFLAGS) $(LDLIBS) $(if $(HAVE_CUDA),$(NVCC) $(NVCCFLAGS)) $(if $(LIB_CPP),$(CXX))' | md5sum | cut -c1-12)
$(FLAGS_STAMP):
	@mkdir -p $(@D)
	@rm -f $(BUILD)/flags-*
	@touch $@

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.cpp $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.cu $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# lib/dist's MPI backend needs MPI's headers, and so does make bench-comm's plain
# MPI_Allreduce beside it; nothing else does.
$(BUILD)/obj/lib/dist/dist_mpi.o: CFLAGS += $(MPI_CFLAGS)
$(BUILD)/obj/bench/bench_comm.o: CFLAGS += $(MPI_CFLAGS)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# ---------------------------------------------------------------- unit tests
# tests/gpu/test_*.c: the GPU backend's host-side parts, which need no GPU
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c)) $(sort $(wildcard tests/gpu/test_*.c))
UNIT_BIN := $(addprefix $(BUILD)/tests/,$(basename $(notdir $(UNIT_SRC))))

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(FRAMEWORK_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@
$(BUILD)/tests/test_gpu_%: $(BUILD)/obj/tests/gpu/test_gpu_%.o $(FRAMEWORK_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# A stand-in for NVML with scripted counters (tests/trace/fake_nvml.c): the GPU counters'
# unit test loads it by path (never linked) from beside itself.
FAKE_NVML := $(BUILD)/tests/fake-nvml/libnvidia-ml.so.1
$(FAKE_NVML): tests/trace/fake_nvml.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 $< -o $@
$(BUILD)/tests/test_core_gpu_counters: | $(FAKE_NVML)

# tests/dist/: programs that mpirun starts as several ranks (tests/dist/run.sh)
DIST_TEST_BIN := $(if $(HAVE_MPI),$(BUILD)/tests/dist/test_collectives $(BUILD)/tests/dist/test_pipeline \
                                  $(BUILD)/tests/dist/test_grid $(BUILD)/tests/dist/test_zero \
                                  $(BUILD)/tests/dist/test_zero_ckpt $(BUILD)/tests/dist/test_tensor_parallel)
$(BUILD)/tests/dist/%: $(BUILD)/obj/tests/dist/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# make check-gpu: every CUDA op against its CPU twin, then training on both devices
CHECK_GPU_BIN := $(BUILD)/tests/check_gpu
$(CHECK_GPU_BIN): $(BUILD)/obj/tests/gpu/check_gpu.o $(BUILD)/obj/tests/gpu/check_gpu16.o $(BUILD)/obj/tests/gpu/check_graph.o $(FRAMEWORK_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# tools/trace's C side: the shares of a step from the library (tests/trace/run.sh: = Python's)
TRACE_SHARES_BIN := $(BUILD)/tools/trace-shares
$(TRACE_SHARES_BIN): $(BUILD)/obj/tools/trace/trace_shares.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# ---------------------------------------------------------------- lessons
# course/NN-name/ is the single source; lessons/ (TODO stubs) and solutions/
# (complete) are generated from it by unifdef and committed.
LESSON_DIRS := $(sort $(notdir $(wildcard course/[0-9][0-9]-*)))
# N as 1 or 01 -> the directory name, e.g. 01-cpu-cnn
lesson_dir = $(firstword $(filter $(shell (printf '%02d' $$((10#$(1)))) 2>/dev/null)-%,$(LESSON_DIRS)))

# A stub leaves the sizes it declares for the participant unused: no warning for that.
# -fno-optimize-sibling-calls: a call the lesson's code ends with stays a call, so a
# grader can tell who called a library function (grade01's refuse_from_lesson).
LESSON_CFLAGS = $(CFLAGS) -Wno-unused-parameter -Wno-unused-variable -Wno-unused-but-set-variable \
                -fno-optimize-sibling-calls
# (177: a stub's kernel that nothing launches yet)
LESSON_NVCCFLAGS = $(NVCCFLAGS) -diag-suppress 177 -Xcompiler -Wno-unused-parameter,-Wno-unused-variable
# A lesson's .cu files (kernels) are built only where nvcc is: its C code calls them
# under #ifdef HAVE_CUDA and otherwise runs its CPU part.
lesson_objs = $(patsubst %.c,$(BUILD)/%.o,$(filter-out $(2),$(wildcard $(1)/*.c))) \
              $(if $(HAVE_CUDA),$(patsubst %.cu,$(BUILD)/%.o,$(wildcard $(1)/*.cu)))

# $(1): lessons or solutions, $(2): lesson directory
# Grader link flags per lesson. Lesson 01's grader catches a TODO that calls the
# library's own version (tests/graders/grade01.c, refuse_from_lesson): --wrap sends
# those calls through it, -rdynamic names the caller.
GRADE_WRAPPED_01 := conv2d_forward conv2d_backward maxpool2d_forward maxpool2d_backward \
                    softmax_cross_entropy adam_step adam_update cnn_train_epoch cnn_evaluate
GRADE_LDFLAGS_01 := -rdynamic $(foreach f,$(GRADE_WRAPPED_01),-Wl,--wrap=$(f))
# Lesson 04's grader likewise (tests/graders/grade04.c).
GRADE_WRAPPED_04 := text_batchify text_get_batch positional_table_fill layernorm_forward \
                    layernorm_backward attention_forward attention_backward
GRADE_LDFLAGS_04 := -rdynamic $(foreach f,$(GRADE_WRAPPED_04),-Wl,--wrap=$(f))
# Lesson 05's grader likewise (tests/graders/grade05.c): the library's twins of TODOs
# 5.1-5.6, not the helpers the TODOs call (ppo_act, ppo_env_step, adam_step, ...).
GRADE_WRAPPED_05 := ppo_collect gae ppo_policy_loss ppo_value_loss ppo_entropy_bonus \
                    categorical_entropy categorical_entropy_backward ppo_normalize_advantages ppo_update
GRADE_LDFLAGS_05 := -rdynamic $(foreach f,$(GRADE_WRAPPED_05),-Wl,--wrap=$(f))
# Lesson 06's grader (tests/graders/grade06.c): the ring of TODO 6.7 must not call the
# library's collectives, TODO 6.4 divides by hand on the CPU, a ring's blocking sends and its
# dist_sendrecv steps are watched (its plain receives too), and dist_init can report a
# made-up layout of 2 nodes (or stop a --device cuda setup: was cuda_require called
# first?), and a ring's tensor_range that the library would refuse gets a ring hint.
GRADE_WRAPPED_06 := tensor_range cuda_require dist_init dist_broadcast dist_all_reduce dist_all_gather dist_reduce_scatter \
                    dist_all_reduce_start dist_send dist_recv dist_sendrecv
GRADE_LDFLAGS_06 := -rdynamic $(foreach f,$(GRADE_WRAPPED_06),-Wl,--wrap=$(f))
# Lesson 07's grader likewise (tests/graders/grade07.c): the twins of TODOs 7.1-7.6, not
# pipeline_forward/backward/step, which the TODOs call. It also watches the messages of
# TODO 7.2 (dist_send, dist_send_start, dist_recv, dist_wait: the peer, and no waiting),
# and knows when a rank waits for others (those and the step's collectives): a rank
# stuck elsewhere loops. TODO 7.5 runs once on a p->dloss marked as GPU memory
# (pipeline_loss_grad and tensor_scale stand in for the GPU there).
GRADE_WRAPPED_07 := pipeline_partition pipeline_send_activation pipeline_recv_activation \
                    pipeline_send_gradient pipeline_recv_gradient pipeline_micro_loss_grad \
                    pipeline_run_gpipe pipeline_run_1f1b pipeline_bubble_fraction pipeline_bubble_formula \
                    dist_send dist_send_start dist_recv dist_wait dist_barrier dist_all_gather_double dist_sum_double \
                    pipeline_loss_grad tensor_scale
GRADE_LDFLAGS_07 := -rdynamic $(foreach f,$(GRADE_WRAPPED_07),-Wl,--wrap=$(f))
# Lesson 08's grader (tests/graders/grade08.c): the ring reduce-scatter of TODO 8.2 may
# not call the library's collectives (the other TODOs may: they are their callers), nor
# a blocking send or receive on its own (it must pair them: dist_sendrecv).
GRADE_WRAPPED_08 := dist_reduce_scatter dist_reduce_scatter_start dist_all_reduce \
                    dist_all_reduce_start dist_all_gather dist_all_gather_start dist_send dist_recv
GRADE_LDFLAGS_08 := -rdynamic $(foreach f,$(GRADE_WRAPPED_08),-Wl,--wrap=$(f))

# Lesson 09's grader (tests/graders/grade09.c): each TODO may not call the library's twin.
GRADE_WRAPPED_09 := tp_shard tp_qkv_rows tp_f tp_g tp_row_linear_forward tp_vocab_cross_entropy \
                    tensor_parallel_param_count tensor_parallel_bytes
GRADE_LDFLAGS_09 := -rdynamic $(foreach f,$(GRADE_WRAPPED_09),-Wl,--wrap=$(f))

# Lesson 10's grader (tests/graders/grade10.c and its parts, grade10_*.h): a TODO may not
# call the library's twin; one line per part. (prefetch_start and prefetch_wait are not
# refused: the grader notes TODO 10.6's calls of them.)
GRADE_WRAPPED_10_PROFILE := trace_step_shares trace_comm_split prefetch_start prefetch_wait
GRADE_WRAPPED_10_ROOFLINE := roofline_layer_cost roofline_point roofline_mfu
GRADE_WRAPPED_10_PRECISION := loss_scale_unscale loss_scale_update mixed_precision_unscale \
                              mixed_precision_step_done dtype_convert_cpu
GRADE_WRAPPED_10 := $(GRADE_WRAPPED_10_PROFILE) $(GRADE_WRAPPED_10_ROOFLINE) $(GRADE_WRAPPED_10_PRECISION)
GRADE_LDFLAGS_10 := -rdynamic $(foreach f,$(GRADE_WRAPPED_10),-Wl,--wrap=$(f))

define LESSON_RULES
$(BUILD)/$(1)/$(2)/%.o: $(1)/$(2)/%.c $(wildcard $(1)/$(2)/*.h) $$(FLAGS_STAMP)
	@mkdir -p $$(@D)
	$$(CC) $$(LESSON_CFLAGS) -I$(1)/$(2) -MMD -MP -c $$< -o $$@
$(BUILD)/$(1)/$(2)/%.o: $(1)/$(2)/%.cu $(wildcard $(1)/$(2)/*.h) $$(FLAGS_STAMP)
	@mkdir -p $$(@D)
	$$(NVCC) $$(LESSON_NVCCFLAGS) -I$(1)/$(2) -MMD -MP -c $$< -o $$@
$(BUILD)/$(1)/$(2)/grade.o: tests/graders/grade$(firstword $(subst -, ,$(2))).c $(wildcard $(1)/$(2)/*.h) $$(FLAGS_STAMP)
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) -I$(1)/$(2) -DLESSON_PATH='"$(1)/$(2)"' -MMD -MP -c $$< -o $$@
$(BUILD)/$(1)/$(2)/train: $(call lesson_objs,$(1)/$(2),) $(LIB)
	$$(CC) $$^ $$(LDLIBS) -o $$@
$(BUILD)/$(1)/$(2)/grade: $(BUILD)/$(1)/$(2)/grade.o $(call lesson_objs,$(1)/$(2),%/main.c) $(FRAMEWORK_OBJ) $(LIB)
	$$(CC) $$^ $$(GRADE_LDFLAGS_$(firstword $(subst -, ,$(2)))) $$(LDLIBS) -o $$@
endef
$(foreach d,$(LESSON_DIRS),$(eval $(call LESSON_RULES,lessons,$(d))))
$(foreach d,$(LESSON_DIRS),$(eval $(call LESSON_RULES,solutions,$(d))))

LESSON_BINS := $(foreach k,lessons solutions,$(foreach d,$(LESSON_DIRS),$(BUILD)/$(k)/$(d)/train $(BUILD)/$(k)/$(d)/grade))

# ---------------------------------------------------------------- bench
BENCH_BIN := $(BUILD)/bench/bench_cnn

$(BENCH_BIN): $(BUILD)/obj/bench/bench_cnn.o $(BUILD)/obj/bench/layer_times.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# Lesson 04's transformer (make bench runs it after the CNN)
BENCH_TF_BIN := $(BUILD)/bench/bench_transformer
$(BENCH_TF_BIN): $(BUILD)/obj/bench/bench_transformer.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# The communication benchmark: built where MPI is (it is started as several ranks).
BENCH_COMM_BIN := $(if $(HAVE_MPI),$(BUILD)/bench/bench_comm)
$(BUILD)/bench/bench_comm: $(BUILD)/obj/bench/bench_comm.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# The GPU benchmark: built where nvcc is (it needs the CUDA layers).
BENCH_GPU_BIN := $(if $(HAVE_CUDA),$(BUILD)/bench/bench_gpu)
$(BUILD)/bench/bench_gpu: $(BUILD)/obj/bench/bench_gpu.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# Lesson 05's pieces that its program does not time alone (make bench-ppo)
BENCH_PPO_BIN := $(BUILD)/bench/bench_ppo
$(BENCH_PPO_BIN): $(BUILD)/obj/bench/bench_ppo.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# ---------------------------------------------------------------- make gpu-report
# Every GPU check and benchmark the project owes, one report (tools/gpu-report/items.py
# lists them). A GPU node without a compiler gets them built ahead and carried:
#   make -j2 BUILD=build-gpu ARCH=x86-64-v3 CUDA_ARCH=90 ... gpu-report-build   (here)
#   make gpu-report BUILD=build-gpu PREBUILT=1                                 (there)
GPU_REPORT_DIR ?= $(BUILD)/gpu-report
GPU_REPORT_LESSONS := 00-hello-gpu 02-gpu-cnn 04-transformer 06-ddp 07-pipeline 08-zero 09-tensor-parallel \
                      10-performance
GPU_REPORT_BINS := $(CHECK_GPU_BIN) $(BUILD)/tests/test_dist $(BENCH_GPU_BIN) $(BUILD)/bench/bench_comm \
                   $(foreach d,$(GPU_REPORT_LESSONS),$(BUILD)/solutions/$(d)/train) \
                   $(foreach d,00-hello-gpu 02-gpu-cnn,$(BUILD)/solutions/$(d)/grade $(BUILD)/lessons/$(d)/grade)
PREBUILT ?=
GPU_REPORT_EMULATED ?=
GPU_REPORT_BUDGET ?=
# GPU_REPORT_CPU_RANKS=N: the multi-GPU items alone, on N CPU ranks (no GPU needed)
GPU_REPORT_CPU_RANKS ?=

# What a trace's range costs (make bench-trace)
BENCH_TRACE_BIN := $(BUILD)/bench/bench_trace
$(BENCH_TRACE_BIN): $(BUILD)/obj/bench/bench_trace.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# The per-node sampler a job script starts beside its program (slurm/lib/job.sh's
# job_monitor_start; lesson 10)
MONITOR_BIN := $(BUILD)/tools/node-monitor
$(MONITOR_BIN): $(BUILD)/obj/tools/monitor/node_monitor.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $^ $(LDLIBS) -o $@

# ---------------------------------------------------------------- targets
.SECONDARY:  # keep intermediate objects: no relinking on the next make
.DELETE_ON_ERROR:  # a failed link or compile leaves no half-written file behind
.PHONY: all help config deps demo test unit-tests asan-tests check-lesson run-lesson \
        lessons check-lessons-sync bench bench-transformer bench-comm bench-ddp bench-pipeline bench-zero bench-ppo bench-trace check-gpu check-gpu-emulated bench-gpu bench-gpu-lm \
        gpu-report gpu-report-build clean slides

all: config $(LIB) $(UNIT_BIN) $(DIST_TEST_BIN) $(CHECK_GPU_BIN) $(TRACE_SHARES_BIN) $(LESSON_BINS) $(BENCH_BIN) $(BENCH_TF_BIN) $(BENCH_GPU_BIN) $(BENCH_COMM_BIN) $(BENCH_PPO_BIN) $(BENCH_TRACE_BIN) $(MONITOR_BIN) ## build the library, tests, lessons, solutions and benchmark

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' Makefile mk/*.mk | sed -E 's/:.*## /\t/' | \
	  awk -F'\t' '{printf "  make %-20s %s\n", $$1, $$2}'
	@echo "  variables: SOLUTION=1 (grade/run the solution), ARGS=\"...\" (program options),"
	@echo "             ARCH=x86-64-v3 (portable build), THREADS=N (OpenMP threads)"

config: ## show which optional parts were found
	$(info $(REPORT))
	@:

deps: ## install the optional Debian packages (run as root)
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$(grep -v '^#' tools/debian-packages.txt)

SOLUTION ?=
KIND = $(if $(filter 1 yes true,$(SOLUTION)),solutions,lessons)
THREADS ?= $(shell nproc)

demo: $(BUILD)/solutions/01-cpu-cnn/train ## train the lesson 01 solution for one epoch on the best data available
	@if [ -n "$(HAVE_FMNIST)" ] || ls datasets/data/fashion-mnist/train-images* >/dev/null 2>&1; \
	then ds=fashion-mnist; else ds=synthetic; \
	  echo "Fashion-MNIST not found (sudo make deps installs it): training on the synthetic set"; fi; \
	OMP_NUM_THREADS=$(THREADS) $< --dataset $$ds --epochs 1 --threads $(THREADS)

check-lesson: ## grade lesson N (its program is built too): make check-lesson 1 [SOLUTION=1]
	@d="$(call lesson_dir,$(word 2,$(MAKECMDGOALS)))"; \
	if [ -z "$$d" ]; then echo "error: $(if $(word 2,$(MAKECMDGOALS)),there is no lesson $(word 2,$(MAKECMDGOALS)),give a lesson number$(,) e.g. make check-lesson 1) (lessons: $(LESSON_DIRS))" >&2; exit 1; fi; \
	$(MAKE) --no-print-directory $(BUILD)/$(KIND)/$$d/grade $(BUILD)/$(KIND)/$$d/train && \
	OMP_NUM_THREADS=$(THREADS) $(BUILD)/$(KIND)/$$d/grade

# RANKS=N starts N ranks on this machine with mpirun (lessons 06, 07, 08 and 09; N = 1 takes
# the same path): more ranks than cores is allowed, shared memory between them, and
# OMPI_ALLOW_RUN_AS_ROOT so that it also runs in a container as root. THREADS is per
# rank: unless given, the cores are shared out between the ranks. Lesson 05 (PPO) runs
# on one thread unless THREADS is given, and its threads wait passively: its second
# thread pays only on a free core, and a spinning one takes the core from the first
# (a shared 2-core machine: 77 s against 9.6 s).
RUN_THREADS = $(if $(and $(RANKS),$(filter file,$(origin THREADS))),$(shell n=$$(( $(THREADS) / $(RANKS) )); echo $$(( n > 0 ? n : 1 ))),$(THREADS))
RUN_MPI = OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
          mpirun -n $(RANKS) --oversubscribe --bind-to none -x OMP_NUM_THREADS
run-lesson: ## run lesson N's program: make run-lesson 1 [SOLUTION=1] [RANKS=2] ARGS="--epochs 1"
	@d="$(call lesson_dir,$(word 2,$(MAKECMDGOALS)))"; \
	if [ -z "$$d" ]; then echo "error: $(if $(word 2,$(MAKECMDGOALS)),there is no lesson $(word 2,$(MAKECMDGOALS)),give a lesson number$(,) e.g. make run-lesson 1) (lessons: $(LESSON_DIRS))" >&2; exit 1; fi; \
	$(if $(RANKS),command -v mpirun >/dev/null || { echo "error: RANKS=$(RANKS) needs Open MPI's mpirun (sudo make deps)" >&2; exit 1; };) \
	$(MAKE) --no-print-directory $(BUILD)/$(KIND)/$$d/train && \
	t=$(RUN_THREADS); case $$d in 05-*) $(if $(filter file,$(origin THREADS)),t=1;) \
	  export OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive};; esac; \
	OMP_NUM_THREADS=$$t $(if $(RANKS),$(RUN_MPI)) $(BUILD)/$(KIND)/$$d/train --threads $$t $(ARGS)

lessons: ## regenerate lessons/ and solutions/ from the single source in course/
	@tools/generate-lessons.sh

check-lessons-sync: ## fail if lessons/ or solutions/ differ from what course/ generates
	@tools/generate-lessons.sh --check

test: all ## build everything and run every test (last line: N passed, M failed)
	@tests/run-all.sh

unit-tests: $(UNIT_BIN) ## run the library's unit tests only
	@tests/run-suites.sh $(UNIT_BIN)

asan-tests: ## the unit tests under AddressSanitizer and UndefinedBehaviorSanitizer
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan NVCC= OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
	  LDEXTRA="-fsanitize=address,undefined" $(BUILD)/asan/libcourse.a $(UNIT_BIN:$(BUILD)/%=$(BUILD)/asan/%)
	@tests/run-suites.sh $(UNIT_BIN:$(BUILD)/%=$(BUILD)/asan/%)

# Each model twice: one training step on a fixed batch (the kernels), then a whole epoch
# of its lesson's solution program (bench/run-bench-epoch.sh; EPOCH_ROUNDS=0 skips those);
# the ratios to PyTorch of both, together at the end.
bench: $(BENCH_BIN) $(BENCH_TF_BIN) $(BUILD)/solutions/01-cpu-cnn/train $(BUILD)/solutions/04-transformer/train ## CNN and transformer training speed, a fixed batch and a whole epoch: images/s or tokens/s, GFLOP/s, share of peak, and PyTorch side by side
	@s=$(BUILD)/bench/summary.txt; rm -f $$s; export BENCH_SUMMARY=$$s; \
	bench/run-bench.sh $(BENCH_BIN) $(THREADS) && \
	bench/run-bench-epoch.sh cnn $(BUILD) $(THREADS) && \
	bench/run-bench-transformer.sh $(BENCH_TF_BIN) $(THREADS) && \
	bench/run-bench-epoch.sh transformer $(BUILD) $(THREADS) && \
	if [ -s $$s ]; then echo; echo "C / PyTorch on $(THREADS) threads (load now: $$(cut -d' ' -f1-3 /proc/loadavg)):"; sed 's/^/  /' $$s; fi

bench-transformer: $(BENCH_TF_BIN) ## lesson 04's transformer only: tokens/s of both presets against PyTorch, GFLOP/s, share of peak, per-layer times
	@bench/run-bench-transformer.sh $(BENCH_TF_BIN) $(THREADS)

check-gpu: $(CHECK_GPU_BIN) ## every CUDA op against the CPU, then CNN training on both (skips without a GPU)
	@$(CHECK_GPU_BIN)

check-gpu-emulated: ## check-gpu's checks on a CPU emulator of lib/cuda/*.cu: the kernels' logic, not a GPU run
	@tests/gpu/emulator/run.sh $(BUILD)/emulator

bench-comm: $(BENCH_COMM_BIN) $(BUILD)/solutions/06-ddp/train ## all-reduce bandwidth 8 B-256 MB on RANKS (2) ranks; lesson 06's ring against MPI_Allreduce
	@bench/run-bench-comm.sh $(BUILD) $(or $(RANKS),2) $(or $(COMM_DEVICE),cpu)

bench-ddp: $(BUILD)/solutions/06-ddp/train ## lesson 06 scaling: images/s on 1 and RANKS (2) ranks, efficiency, exposed communication
	@bench/run-bench-ddp.sh $(BUILD) $(or $(RANKS),2)

bench-pipeline: $(BUILD)/solutions/07-pipeline/train ## lesson 07: bubble measured against (p-1)/(m+p-1), p = 2-4, m = 1-32, GPipe and 1F1B; activation memory; 2 ranks against 1
	@bench/run-bench-pipeline.sh $(BUILD) $(or $(ROUNDS),3)

bench-zero: $(BUILD)/solutions/08-zero/train ## lesson 08: step time of ZeRO stages 1-3 against plain data parallel on RANKS (2) CPU ranks, exposed communication, bytes and memory
	@bench/run-bench-zero.sh $(BUILD) $(or $(RANKS),2) $(or $(ROUNDS),3)

bench-trace: $(BENCH_TRACE_BIN) $(BUILD)/solutions/06-ddp/train ## what --trace costs: lesson 06 on RANKS (2) ranks with and without it (best of ROUNDS, 5), and a range's cost times a step's ranges
	@bench/run-bench-trace.sh $(BUILD) $(or $(RANKS),2) $(or $(ROUNDS),5)

bench-ppo: $(BENCH_PPO_BIN) $(BUILD)/solutions/05-ppo/train ## lesson 05: seconds to a CartPole return of 475 (median of 5 seeds), C against PyTorch; steps/s, where the time goes
	@bench/run-bench-ppo.sh $(BUILD) $(THREADS) $(or $(SEEDS),5)

bench-gpu: $(BENCH_GPU_BIN) ## on a GPU node: CNN training images/s vs PyTorch on the same GPU, GEMM vs cuBLAS
	@bench/run-bench-gpu.sh $(BENCH_GPU_BIN)

bench-gpu-lm: $(BUILD)/solutions/04-transformer/train ## on a GPU node: lesson 04's seed-size transformer, library bf16 against compiled PyTorch bf16 at 20x35, 64x128, 128x256: tokens/s, ratio, MFU [ROUNDS=3] [SMOKE=1: the CPU, tiny sizes]
	@PYTHON="$$(command -v $(PYTHON) || command -v python3)" bench/run-bench-gpu-lm.sh $(BUILD) \
	  $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(filter 1 yes true,$(SMOKE)),--smoke)

gpu-report: ## on a GPU node (or in an allocation of several: salloc, make submit gpu-check): every GPU check owed, one report: build/gpu-report/report.md and .json [PREBUILT=1] [GPU_REPORT_EMULATED=1] [GPU_REPORT_CPU_RANKS=2] [GPU_REPORT_ONLY="ID ..."]
	@if [ -z "$(PREBUILT)$(GPU_REPORT_EMULATED)$(GPU_REPORT_CPU_RANKS)" ] && nvidia-smi -L >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory gpu-report-build; fi
	@"$$(command -v $(PYTHON) || command -v python3)" tools/gpu-report/gpu-report.py --build $(BUILD) \
	  --out $(GPU_REPORT_DIR) $(if $(filter 1 yes true,$(GPU_REPORT_EMULATED)),--emulated) \
	  $(if $(GPU_REPORT_CPU_RANKS),--cpu-ranks $(GPU_REPORT_CPU_RANKS)) \
	  $(if $(GPU_REPORT_BUDGET),--budget $(GPU_REPORT_BUDGET)) \
	  $(if $(GPU_REPORT_ONLY),--only $(GPU_REPORT_ONLY))

gpu-report-build: $(GPU_REPORT_BINS) ## build what make gpu-report runs (with BUILD=build-gpu ...: to carry to a GPU node)
	@git describe --always --dirty >$(BUILD)/gpu-report-commit 2>/dev/null || rm -f $(BUILD)/gpu-report-commit

clean: ## remove build/
	rm -rf $(BUILD)


include mk/cluster.mk
include mk/slides.mk
include mk/fuzz.mk
include mk/image.mk

# `make check-lesson 1`: the number is a goal too; make it a no-op.
ifneq ($(filter check-lesson run-lesson submit,$(MAKECMDGOALS)),)
%:
	@:
endif

# (not under build/image/: an image's root, whose /etc has rc0.d/ and whose course has its own build)
-include $(shell find $(BUILD) -path $(BUILD)/image -prune -o -name '*.d' -type f -print 2>/dev/null)
