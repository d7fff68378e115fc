# Cluster targets, included by the Makefile: Slurm submission, the local test
# Slurm, data set fetching, and the MPI launch check.

SITE ?= $(or $(COURSE_SITE),generic)
DRY  ?=

# The MPI launch check of slurm/mpi-check.sbatch (needs mpicc).
MPI_CHECK_BIN := $(if $(HAVE_MPI),$(BUILD)/slurm/mpi_allreduce)
$(BUILD)/slurm/mpi_allreduce: tests/slurm/mpi_allreduce.c
	@mkdir -p $(@D)
	mpicc -O2 -Wall -Wextra $(WERROR) $< -o $@

submit: ## submit lesson N to Slurm: make submit 1 [SITE=name] [SOLUTION=1] [NODES=n] [DRY=1] [ARGS="..."]; make submit gpu-check SITE=name: make gpu-report on its GPU nodes
	@tools/submit.sh "$(word 2,$(MAKECMDGOALS))" --site "$(SITE)" $(if $(NODES),--nodes "$(NODES)") \
	  $(if $(filter 1 yes true,$(SOLUTION)),--solution) $(if $(filter 1 yes true,$(DRY)),--dry) -- $(ARGS)

slurm-start: ## start a single-node Slurm on this machine (root; for tests and laptops)
	@tools/slurm-local.sh start

slurm-stop: ## stop the single-node Slurm again
	@tools/slurm-local.sh stop

check-slurm: $(MPI_CHECK_BIN) ## run the sbatch scripts under the local Slurm (starts it when root)
	@tests/slurm/run.sh

datasets: ## download data sets on a login node: make datasets [DATASETS="mnist cifar10"]
	@datasets/fetch.sh $(DATASETS)


.PHONY: submit slurm-start slurm-stop check-slurm datasets
