#!/usr/bin/env bash
# What an image built by make image is: digest, commit, sizes (the root unpacked, the
# SquashFS compressed), package count. tools/image/report.sh build/image
set -euo pipefail
out=${1:-build/image}
info="$out/root/etc/dl-course-image"
[ -r "$info" ] || { echo "no image in $out (make image)" >&2; exit 1; }
sed 's/^/  /' "$info"
echo "  size $(du -sh --apparent-size "$out/root" | cut -f1) unpacked ($out/root, ch-run)," \
     "$(du -h --apparent-size "$out/dl-course.sqsh" | cut -f1) as SquashFS ($out/dl-course.sqsh, Enroot/Pyxis)"
echo "  Apptainer: $out/dl-course.def (apptainer build dl-course.sif $out/dl-course.def)"
