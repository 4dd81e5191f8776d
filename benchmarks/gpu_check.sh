#!/usr/bin/env bash
# The GPU check (issue 25), run once on a GPU machine from the repository root, in under 5 minutes:
#   (a) the GPUs and versions, (b) tests/gpu (the GPU kernels against the numpy ones),
#   (c) benchmarks/bench_gpu.py (the CIFAR-10 tutorial net on one GPU, beside PyTorch) and
#       bench_gpu_conv.py (its convolutions: cuDNN against im2col),
#   (d) examples/cifar10 on 1 ps (CPU) + 2 GPU workers under `tensorweave launch`, examples/s.
# The machine has python3 with CuPy, PyTorch, JAX and libcudnn but not our dependencies and no
# network: .whl/ (ignored) holds the wheels it lacks, fetched here for its Python 3.12 with
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux1_x86_64 -d .whl \
#       pyzmq crc32c cryptography cffi pycparser numexpr nvidia-cudnn-frontend
# (oneDNN's 39 MB wheel would take the working tree past the 64 MiB a device run carries: the
# ps task runs its numpy kernels there). Every step runs under `timeout`, and a step that fails
# or hangs does not stop the next. The whole log goes to $OUT/gpu_check.log when $OUT is set.
#   bash benchmarks/gpu_check.sh            # GPU_CHECK_STEPS=ad: only steps (a) and (d)
#   GPU_CHECK_QUICK=1 bash benchmarks/gpu_check.sh   # shorter windows and limits: about 2.5 minutes
set -u
cd "$(dirname "$0")/.."
SELF="$PWD/benchmarks/gpu_check.sh"
# step NAME SECONDS COMMAND...: runs COMMAND with a time limit (SIGKILL 5 s after the SIGTERM)
step() {
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    echo
    echo "=== $name (limit ${limit} s; $(date -u +%T) UTC)"
    timeout -k 5 "$limit" "$@"
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        echo "=== $name: TIMED OUT after ${limit} s"
        FAILED+=("$name (timed out)")
    elif [ "$rc" != 0 ]; then
        echo "=== $name: FAILED (exit $rc, $((SECONDS - t0)) s)"
        FAILED+=("$name (exit $rc)")
    else
        echo "=== $name: ok ($((SECONDS - t0)) s)"
    fi
}

versions() {
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,utilization.gpu --format=csv
    git log -1 --format='tensorweave %h %s' 2>/dev/null
    python3 - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0])
for name in ("numpy", "scipy", "cupy", "cudnn", "torch", "jax", "zmq", "msgpack"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as e:   # a missing one is reported, not fatal
        print(name, "MISSING:", type(e).__name__, e)
import cupy
print("cupy sees", cupy.cuda.runtime.getDeviceCount(), "GPU(s); CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())
import tensorweave as tf
from tensorweave.ops import cudnn
print("tensorweave's cuDNN:", f"libcudnn {cudnn.api().backend_version()}" if cudnn.api() else "none (im2col runs)")
print("tensorweave GPUs:", [d.name for d in tf.config.experimental.list_physical_devices("GPU")])
EOF
}

cluster() {
    # 1 ps (no GPU: `launch` gives ps tasks none) + 2 workers sharing GPU 0, a tower each,
    # asynchronous, on random records in CIFAR-10's binary format (label byte + 32x32x3 bytes)
    mkdir -p "$WORK/data"
    python3 -c "import numpy as np, sys
for i, name in enumerate([f'data_batch_{k}.bin' for k in range(1, 6)] + ['test_batch.bin']):
    r = np.random.RandomState(i).randint(0, 256, (2000, 3073)).astype(np.uint8)
    r[:, 0] %= 10
    r.tofile(sys.argv[1] + '/' + name)" "$WORK/data" || return 1
    # (stopped after 60 s if not done by then: the progress lines already give examples/s)
    timeout -s INT "${CLUSTER_S:-60}" python3 -m tensorweave.cli launch --ps 1 --workers 2 --num_gpus 1 \
        examples/cifar10/cifar10_train.py --data_dir="$WORK/data" --train_dir="$WORK/train" --max_steps=400 \
        --log_frequency=25 --batch_size=128 --num_gpus=1 --save_checkpoint_secs=600 | tee "$WORK/cluster.log"
    local rc=${PIPESTATUS[0]} reports
    reports=$(grep -c "examples/s" "$WORK/cluster.log")
    echo "(launch exit $rc; $reports progress lines of the chief, each the whole job's examples/s)"
    [ "$rc" = 0 ] || { [ "$rc" = 124 ] && [ "$reports" -ge 2 ]; }
}

if [ "${1:-}" = "--step" ]; then   # one step's function, run by `step` under `timeout` (a fresh bash)
    "$2"
    exit $?
fi

LOG="${OUT:-/tmp}/gpu_check.log"
exec > >(tee "$LOG") 2>&1
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "!!! installing .whl/*.whl failed"
export PYTHONPATH=/tmp/site:$PWD
export WORK=$(mktemp -d /tmp/gpu_check.XXXXXX)
START=$SECONDS
FAILED=()

STEPS=${GPU_CHECK_STEPS:-abcd}
LIMIT_B=120 LIMIT_C=75 LIMIT_D=75 BENCH_ARGS="--windows 5 --window_s 3"
if [ -n "${GPU_CHECK_QUICK:-}" ]; then
    LIMIT_B=45 LIMIT_C=55 LIMIT_D=50 BENCH_ARGS="--windows 3 --window_s 2"
    export CLUSTER_S=38
fi
[[ $STEPS == *a* ]] && step "(a) GPUs and versions" 30 bash "$SELF" --step versions
if [[ $STEPS == *b* ]] && [ -d tests/gpu ]; then
    step "(b) GPU kernels vs numpy: pytest tests/gpu" "$LIMIT_B" python3 -m pytest -q -rf --maxfail=30 -p no:cacheprovider tests/gpu
elif [[ $STEPS == *b* ]]; then
    echo "=== (b) tests/gpu: missing on this branch"
    FAILED+=("(b) tests/gpu missing")
fi
[[ $STEPS == *c* ]] && step "(c) bench_gpu.py: tutorial net on one GPU, tensorweave vs PyTorch" "$LIMIT_C" \
    python3 benchmarks/bench_gpu.py $BENCH_ARGS
[[ $STEPS == *c* ]] && step "(c) bench_gpu_conv.py: the convolutions, cuDNN against im2col" 40 \
    python3 benchmarks/bench_gpu_conv.py --calls 100 --windows 3
[[ $STEPS == *d* ]] && step "(d) CIFAR-10 example: 1 ps (CPU) + 2 GPU workers" "$LIMIT_D" bash "$SELF" --step cluster

echo
echo "=== gpu_check done in $((SECONDS - START)) s; log: $LOG"
if [ ${#FAILED[@]} -gt 0 ]; then
    printf '=== not ok: %s\n' "${FAILED[@]}"
    exit 1
fi
echo "=== all steps ok"
