#!/usr/bin/env bash
# The PyTorch pilot from tiny-arith-steps: ARM (rlvr | ceiling), LR, SEED; skips a finished run.
# Usage: bash runs/steps/pilot.sh ARM LR SEED
cd "$(dirname "$0")/../../scripts/fixtures"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
arm=$1 lr=$2 seed=$3
seeds=../../data/seeds/curriculum-500.jsonl
[ "$arm" = ceiling ] && seeds=../../data/seeds/curriculum-all-levels-1000.jsonl
f=../../runs/steps/pilot/$arm-lr$lr-seed$seed.jsonl
mkdir -p ../../runs/steps/pilot
if [ -f "$f" ] && grep -q '"kind": "validation", "step": 100,' "$f"; then exit 0; fi
echo "$(date -u +%T) start $arm $lr $seed"
/tmp/tv/bin/python rl_reference.py --model ../../data/models/tiny-arith-steps \
  --seeds $seeds --validation ../../data/validation/curriculum-1000.jsonl \
  --prompts ../../runs/sweep/prompts.jsonl --steps 100 --eval-every 20 --lr $lr --advantage grpo --samples 8 --problems 8 \
  --max-new 96 --seed $seed --out "$f" > /dev/null
echo "$(date -u +%T) done $arm $lr $seed"
