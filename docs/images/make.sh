#!/usr/bin/env bash
# Regenerates the pictures in docs/images from real runs (run from the repo root).
# The killed run kills the Security lifeline's process with SIGKILL once 2,000 events are in.
set -euo pipefail
out=docs/images
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The flagship over ZeroMQ (one process per lifeline), drawn at the end of the run.
cpl run examples/code_review.py --arg rounds=2 --seed 1 --trace "$work/review.jsonl" \
    --render "$out/code_review.png"
# Its first merge decision, with what it could and could not see.
first_merge=$(cpl eval "$work/review.jsonl" --format jsonl | python -c \
    'import json, sys; print(next(r["event"] for r in map(json.loads, sys.stdin) if r["event"].startswith("Committer")))')
cpl render "$work/review.jsonl" --highlight "$first_merge" -o "$out/code_review_highlight.png"
# Fig. 2 of the paper, the decision highlighted.
cpl render examples/traces/fig2.json --highlight c3 -o "$out/fig2.png"

# A failing run: a lifeline killed mid-run; the last 40 rows of it.
cpl run examples/code_review.py --arg rounds=1000 --seed 1 --trace "$work/killed.jsonl" \
    >/dev/null 2>&1 & run=$!
until [ "$(wc -l < "$work/killed.jsonl" 2>/dev/null || echo 0)" -gt 2000 ]; do sleep 0.1; done
pkill -9 -f "lifeline Security" || true
wait $run || true
cpl render "$work/killed.jsonl" --max-rows 40 -o "$out/killed.png"
python docs/images/anomaly_pictures.py
