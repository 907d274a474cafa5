"""The request path in front of Dynamo's standalone selection service (python -m dynamo.select_service), which picks
a worker but forwards nothing: per OpenAI request it tokenizes the prompt as the engine does (the model's chat template
for chat, the tokenizer for text), asks POST /select_and_reserve for a worker, forwards the body unchanged to that
worker's endpoint (X-data-parallel-rank set to the chosen rank), streams the answer back, reports the first byte as
POST /reservations/{id}/prefill_complete and frees the reservation with DELETE /reservations/{id} at the end (also on
error or when the client leaves). Registers the engines first (POST /workers with per-rank kv_events_endpoints and the
replay endpoint, from bin/sim engines' engines file). Used by router-bench's `bench peers` only.

usage: dynamo_harness.py --port P --select-url http://127.0.0.1:Q --engines-file engines.yaml --tokenizer DIR
"""

import argparse
import asyncio
import json
import sys

import aiohttp
import yaml
from aiohttp import web
from transformers import AutoTokenizer


def worker_bodies(engines_file):
    with open(engines_file, encoding="utf-8") as f:
        engines = yaml.safe_load(f)["engines"]
    bodies = []
    for number, engine in enumerate(engines):
        dp = int(engine.get("dp_size", 1))
        events = engine["kv_events"]
        host, port = events.rsplit(":", 1)
        bodies.append({
            "worker_id": number,
            "model_name": engine["model"],
            "endpoint": engine["base_url"],
            "block_size": int(engine["block_size"]),
            "kv_events_endpoints": {str(r): f"{host}:{int(port) + r}" for r in range(dp)},
            "replay_endpoint": engine.get("kv_events_replay"),
            "data_parallel_size": dp,
            "max_num_batched_tokens": int(engine["max_num_batched_tokens"]),
            "total_kv_blocks": int(engine["total_kv_blocks"]),
        })
    return bodies


class Harness:
    def __init__(self, select_url, tokenizer_dir):
        self.select_url = select_url.rstrip("/")
        self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        self.session = None

    async def start(self, bodies):
        # one pool for the selection service and the engines; no total timeout (streams last as long as they last)
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
                                             connector=aiohttp.TCPConnector(limit=0))
        for body in bodies:
            async with self.session.post(self.select_url + "/workers", json=body) as response:
                text = await response.text()
                if response.status not in (200, 201) or "\"schedulable\"" not in text:
                    raise SystemExit(f"POST /workers {body['worker_id']} answered {response.status}: {text}")
        print(f"registered {len(bodies)} workers", flush=True)

    def token_ids(self, path, body):
        if path.endswith("/chat/completions"):
            text = self.tokenizer.apply_chat_template(body["messages"], tokenize=False, add_generation_prompt=True)
            return self.tokenizer(text, add_special_tokens=False)["input_ids"]
        prompt = body.get("prompt", "")
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
            return prompt
        if isinstance(prompt, list):
            prompt = prompt[0] if prompt else ""
        return self.tokenizer(prompt)["input_ids"]

    async def handle(self, request):
        raw = await request.read()
        try:
            body = json.loads(raw)
            tokens = self.token_ids(request.path, body)
        except (ValueError, KeyError, TypeError) as e:
            return web.json_response({"error": {"message": f"bad request: {e}", "type": "BadRequestError",
                                                "param": None, "code": 400}}, status=400)
        select = {"model_name": body.get("model"), "token_ids": tokens,
                  "request_id": request.headers.get("x-request-id")}
        async with self.session.post(self.select_url + "/select_and_reserve", json=select) as answer:
            selection = await answer.json(content_type=None)
            if answer.status != 200:
                return web.json_response({"error": {"message": f"selection failed: {selection}",
                                                    "type": "ServiceUnavailable", "param": None, "code": 503}},
                                         status=503)
        reservation = self.select_url + "/reservations/" + selection["selection_id"]
        headers = {"content-type": "application/json", "x-data-parallel-rank": str(selection.get("dp_rank", 0))}
        marked = None
        try:
            async with self.session.post(selection["endpoint"] + request.path, data=raw,
                                         headers=headers) as upstream:
                response = web.StreamResponse(status=upstream.status, headers={
                    "content-type": upstream.headers.get("content-type", "application/json")})
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                    if marked is None:  # the first byte out: the prefill is done
                        marked = asyncio.ensure_future(self.call("POST", reservation + "/prefill_complete"))
                await response.write_eof()
                return response
        finally:
            if marked is not None:
                await marked
            await self.call("DELETE", reservation)

    async def call(self, method, url):
        async with self.session.request(method, url) as answer:
            await answer.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--select-url", required=True)
    parser.add_argument("--engines-file", required=True)
    parser.add_argument("--tokenizer", required=True)
    args = parser.parse_args()
    bodies = worker_bodies(args.engines_file)
    harness = Harness(args.select_url, args.tokenizer)
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", harness.handle)
    app.router.add_post("/v1/completions", harness.handle)

    async def on_startup(_):
        await harness.start(bodies)

    app.on_startup.append(on_startup)
    web.run_app(app, host="127.0.0.1", port=args.port, print=lambda *_: print(
        f"harness serving on 127.0.0.1:{args.port}", flush=True), access_log=None)


if __name__ == "__main__":
    sys.exit(main())
