#!/bin/sh
# check-gpu on a CPU emulator of the CUDA C++ that lib/cuda/*.cu uses:
#
#   tests/gpu/emulator/run.sh [BUILD]        (from the repository root; default build/emulator)
#
# Runs the kernels' own code (indices, grid-stride and warp-per-row loops, barriers,
# shuffles, reductions, the cuBLAS argument mapping) on a machine without a GPU, so their
# logic can be checked before a GPU is at hand. It is NOT a GPU run: blocks run one after
# the other (no races between them can show), memory is host memory, expf/erff are
# glibc's and the GEMMs the host models of cublasSgemm (double sums) and cublasGemmEx
# (float32 sums, C rounded once). Its PASS lines
# say that the CUDA code computes what the CPU code computes, not that it runs on a GPU
# (`make check-gpu` on a GPU node does that). Needs x86-64 or ucontext, g++ and python3.
set -e
BUILD=${1:-build/emulator}
HERE=tests/gpu/emulator
make --no-print-directory BUILD="$BUILD" NVCC= "$BUILD/libcourse.a" \
    "$BUILD/obj/tests/framework/check.o" "$BUILD/obj/tests/framework/gradcheck.o" \
    "$BUILD/obj/tests/framework/tensors.o" >/dev/null
OUT="$BUILD/emulator"
mkdir -p "$OUT"
FLAGS="-O1 -g -fopenmp -I$HERE -Ilib/cuda -Ilib -Itests -DHAVE_CUDA -DCUDA_EMULATOR"
# The kernels' fmaf as the CPU's FMA instruction, not a call into libm: on some x86-64
# machines glibc's fmaf took the fused attention's check from 8 s to over its 180 s
# limit. The same bits either way (fmaf rounds once), and nothing else fused: without
# -mfma there was no FMA to contract into.
KERNEL_FLAGS=
if [ "$(uname -m)" = x86_64 ] && grep -qw fma /proc/cpuinfo 2>/dev/null; then KERNEL_FLAGS="-mfma -ffp-contract=off"; fi
# kernel<<<grid, block, 0, stream>>>(args) -> EMU_LAUNCH((kernel), grid, block, 0, stream)(args); a template's
# arguments (kernel<E, 64, 8>) go inside the parentheses, so their commas stay there
for f in lib/cuda/*.cu; do
    b=$(basename "$f" .cu)
    { echo "#line 1 \"$f\""; python3 -c 'import re, sys; sys.stdout.write(re.sub(r"(\w+(?:<[\w\s,:]*>)?)<<<(.*?)>>>", r"EMU_LAUNCH((\1), \2)", open(sys.argv[1]).read(), flags=re.S))' "$f"; } > "$OUT/$b.cpp"
    g++ -std=c++17 $FLAGS $KERNEL_FLAGS -Wall -Wno-unused-parameter -c "$OUT/$b.cpp" -o "$OUT/$b.o"
done
g++ -std=c++17 $FLAGS -Wall -c "$HERE/emulator.cpp" -o "$OUT/emulator.o"
for f in check_gpu check_gpu16 check_graph; do
    gcc -std=c11 -D_GNU_SOURCE $FLAGS -c tests/gpu/$f.c -o "$OUT/$f.o"
done
# the libraries the Makefile links (read from its database, nothing is built)
LDLIBS=$(make -qp BUILD="$BUILD" NVCC= __nothing__ 2>/dev/null | sed -n 's/^LDLIBS := //p' | head -1)
g++ "$OUT"/*.o "$BUILD/obj/tests/framework/check.o" "$BUILD/obj/tests/framework/gradcheck.o" \
    "$BUILD/obj/tests/framework/tensors.o" \
    "$BUILD/libcourse.a" -fopenmp $LDLIBS -lm -o "$OUT/check_gpu"
echo "check-gpu on the CUDA emulator (CPU): kernels' logic only, not a GPU run"
"$OUT/check_gpu"
