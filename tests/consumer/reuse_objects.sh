#!/bin/sh
# Compiler launcher for the add_subdirectory consumer test (run_consumer.cmake):
#   TRITIUM_REUSE_MANIFEST=<file> reuse_objects.sh COMPILER ARGS...
# The manifest's lines are "<object in the consumer's build> <the same object in Tritium's own build>",
# written only for objects whose compile command is the same in both builds and whose build is up
# to date. Such an object is copied instead of compiled again; anything else is compiled.
# The depfile written for a copied object names only its source: the consumer's build folder is
# scratch, made afresh by every run of the test, so no later incremental build relies on it.
manifest=${TRITIUM_REUSE_MANIFEST:-}
out= dep= src= prev=
for arg in "$@"; do
  case $prev in
    -o) out=$arg ;;
    -MF) dep=$arg ;;
    -c) src=$arg ;;
  esac
  prev=$arg
done
if [ -n "$out" ] && [ -n "$dep" ] && [ -n "$manifest" ] && [ -f "$manifest" ]; then
  from=$(awk -v o="$out" '$1 == o { print $2; exit }' "$manifest")
  if [ -n "$from" ] && cp "$from" "$out"; then
    printf '%s: %s\n' "$out" "$src" >"$dep"
    exit 0
  fi
fi
exec "$@"
