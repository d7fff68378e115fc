# The course in a container image (lesson 11), included by the Makefile. Not part of
# `make test`: the first build downloads Debian's packages and takes minutes; CI runs
# `make check-image` after it.

RECIPE ?= solutions/11-containers/image.conf

image: ## the course in an image from Debian's packages: build/image/ (ch-run dir, Enroot .sqsh, Apptainer .def) [RECIPE=...]
	@$(if $(wildcard $(RECIPE)),,echo "error: no recipe $(RECIPE) (make lessons?)" >&2; exit 1;) \
	  tools/image/build.sh $(RECIPE)

check-image: image $(BUILD)/solutions/11-containers/train ## make image, then run and check it: digest, Enroot format, Apptainer syntax, lessons 01 and 06 inside (ch-run, Slurm)
	@tests/container/run.sh

.PHONY: image check-image
