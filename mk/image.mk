# The course in a container image (lesson 11), included by the Makefile. Not part of
# `make test`: the first build downloads Debian's packages and takes minutes; CI runs
# `make check-image` after it.

RECIPE ?= solutions/11-containers/image.conf
# whose binds.sh, job script and lesson 11 program make check-image runs: solutions or lessons
LESSON_FILES ?= solutions
IMAGE_HOST := build/image/host

image: ## the course in an image from Debian's packages: build/image/ (ch-run dir, Enroot .sqsh, Apptainer .def) [RECIPE=...]
	@$(if $(wildcard $(RECIPE)),,echo "error: no recipe $(RECIPE) (make lessons?)" >&2; exit 1;) \
	  tools/image/build.sh $(RECIPE)

# Lesson 01 outside the image, built with the image's -march (its /etc/dl-course-image;
# x86-64-v3 before make image), without CUDA: what lesson 11's program compares against.
image-host: ## lesson 01's solution outside the image, with the image's ARCH: build/image/host/solutions/01-cpu-cnn/train
	@arch=$$(sed -n 's/^arch //p' build/image/root/etc/dl-course-image 2>/dev/null); \
	  $(MAKE) --no-print-directory BUILD=$(IMAGE_HOST) ARCH=$${arch:-x86-64-v3} NVCC= $(IMAGE_HOST)/solutions/01-cpu-cnn/train

check-image: image $(BUILD)/$(LESSON_FILES)/11-containers/train ## make image, then run and check it: digest, Enroot format, Apptainer syntax, lessons 01 and 06 inside (ch-run, Slurm) [LESSON_FILES=lessons]
	@LESSON_FILES=$(LESSON_FILES) tests/container/run.sh

.PHONY: image image-host check-image
