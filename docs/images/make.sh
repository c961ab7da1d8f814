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

# A failing run: a lifeline killed mid-run; the last 40 rows of it. The trace of a run over
# processes is merged from the lifelines' logs when the run ends, so the kill is timed:
# 1.5 s after the Security process is up (the run would go on for minutes).
cpl run examples/code_review.py --arg rounds=100000 --seed 1 --trace "$work/killed.jsonl" \
    >/dev/null 2>&1 & run=$!
until pgrep -f "lifeline Security" >/dev/null; do sleep 0.1; done
sleep 1.5
pkill -9 -f "lifeline Security"
if wait $run; then echo "make.sh: the killed run ended ok" >&2; exit 1; fi
python - "$work/killed.jsonl" <<'PY'
import json, sys
end = json.loads(open(sys.argv[1]).read().splitlines()[-1])["end"]
assert end["status"] == "died" and end["died"]["lifeline"] == "Security", end
print(f"docs/images/killed.png: died, {len(end.get('in_transit', []))} messages in transit")
PY
cpl render "$work/killed.jsonl" --max-rows 40 -o "$out/killed.png"
# Agents of cpl.live (examples/embedding/asyncio_review.py): their merged logs drawn as SVG,
# which needs no graphviz: the values they set and every event's id.
python examples/embedding/asyncio_review.py --logs "$work/agents" >/dev/null
cpl merge "$work/agents" -o "$work/agents.jsonl" >/dev/null
cpl render "$work/agents.jsonl" -o "$out/agents.svg"
python docs/images/anomaly_pictures.py
python docs/images/viewer_picture.py
