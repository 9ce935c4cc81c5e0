#!/usr/bin/env python3
"""Serves a GGUF model with llama.cpp's server (the xllamacpp wheel) on
127.0.0.1: OpenAI-compatible /v1/chat/completions and /v1/models.

Usage: llm_server.py MODEL.gguf [--port 8080] [--ctx 8192] [--alias NAME] [--seed N] [--jinja]
                     [--parallel N]
--seed fixes the sampler's seed for every request that does not send its
own, so one prompt gets one reply and an eval run can be repeated.
--jinja applies the model's own chat template, which is what turns its
tool calls into OpenAI `tool_calls` (agents such as opencode need them).
--parallel N serves N requests at once (llama.cpp's slots), each with a
context of --ctx tokens; an agent fixing what tests show failing draws
its candidates as many at once as there are free slots.
Prints "ready <port>" once the model answers, then serves until killed.
"""
import argparse
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".deps", "llm"))
import xllamacpp as xlc  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--port", type=int, default=8080)
ap.add_argument("--ctx", type=int, default=8192)
ap.add_argument("--alias", default="qwen2.5-coder")
ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
ap.add_argument("--seed", type=int, default=None)
ap.add_argument("--jinja", action="store_true")
ap.add_argument("--parallel", type=int, default=1)
args = ap.parse_args()

params = xlc.CommonParams()
params.model.path = args.model
params.model_alias = args.alias
# llama.cpp splits the context among its slots.
params.n_ctx = args.ctx * args.parallel
params.n_parallel = args.parallel
params.port = args.port
params.hostnames = ["127.0.0.1"]
params.cpuparams.n_threads = args.threads
params.cpuparams_batch.n_threads = args.threads
params.n_gpu_layers = 0
if args.seed is not None:
    params.sampling.seed = args.seed
params.warmup = False
params.use_jinja = args.jinja
server = xlc.Server(params)

base = f"http://127.0.0.1:{args.port}"
deadline = time.time() + 300
while time.time() < deadline:
    try:
        with urllib.request.urlopen(base + "/v1/models", timeout=2) as r:
            json.load(r)
            print(f"ready {args.port}", flush=True)
            break
    except Exception:
        time.sleep(0.5)
else:
    print("llm_server: the model did not come up within 300 s", file=sys.stderr)
    sys.exit(1)
while True:
    time.sleep(3600)
