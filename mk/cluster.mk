# Cluster targets (Slurm submission, data set fetching, the local test Slurm),
# included by the Makefile.
