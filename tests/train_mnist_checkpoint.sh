#!/usr/bin/env bash
# train-mnist's checkpoints: --save writes the model and the optimiser, --load --epochs 0
# evaluates the saved model to the same test accuracy, training goes on from a loaded
# checkpoint, and loading a checkpoint of the other model ends with one clear line, status 2.
#   train_mnist_checkpoint.sh TRAIN_MNIST SCRATCH_DIR   (exit 77 when Fashion-MNIST is absent)
set -u
train=$1 dir=$2
data=/usr/share/datasets/fashion-mnist
if [[ ! -e $data/train-images-idx3-ubyte.gz && ! -e $data/train-images-idx3-ubyte ]]; then
  echo "skipped: Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
  exit 77
fi
rm -rf "$dir" && mkdir -p "$dir" || exit 1
failures=0
check() {  # check WHAT CONDITION-STATUS
  if [[ $2 -eq 0 ]]; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}
accuracy() { grep -oE 'final: test accuracy [0-9.]+%' <<<"$1"; }

trained=$("$train" --epochs 1 --limit-batches 3 --save "$dir/mlp.safetensors" 2>/dev/null)
check "mlp --save writes both files" $([[ -s $dir/mlp.safetensors && -s $dir/mlp.safetensors.optim ]]; echo $?)
loaded=$("$train" --epochs 0 --load "$dir/mlp.safetensors" 2>/dev/null)
check "--load --epochs 0 evaluates to the saved accuracy ($(accuracy "$trained") vs $(accuracy "$loaded"))" \
  $([[ -n $(accuracy "$trained") && $(accuracy "$trained") == $(accuracy "$loaded") ]]; echo $?)
"$train" --epochs 1 --limit-batches 1 --load "$dir/mlp.safetensors" >/dev/null 2>&1
check "training goes on from a loaded model and optimiser" $?

out=$("$train" --model cnn --epochs 0 --load "$dir/mlp.safetensors" 2>&1)
status=$?
check "cnn --load of an mlp checkpoint: status 2, one line naming the model ($out)" \
  $([[ $status -eq 2 && $(wc -l <<<"$out") -eq 1 && $out == *"checkpoint of the mlp model"* ]]; echo $?)

rm -f "$dir/mlp.safetensors.optim"
out=$("$train" --epochs 1 --limit-batches 1 --load "$dir/mlp.safetensors" 2>&1)
status=$?
check "--load without the optimiser file when training: status 2 naming it ($out)" \
  $([[ $status -eq 2 && $out == *"mlp.safetensors.optim"* ]]; echo $?)

[[ $failures -eq 0 ]] || { echo "$failures of the checks above failed"; exit 1; }
