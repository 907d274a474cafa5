"""kvrouter's HTTP front driven by the official OpenAI Python SDK (pinned in requirements-test.txt).

Usage: openai_front.py CASE BASE_URL MODEL [ARGS...]; prints one JSON object per line on stdout.

  sdk          chat and completions, streaming and not; each answer's text, finish reason, usage and the worker
               header (x-kvrouter-worker) read through with_raw_response
  prefix       N chats sharing a long system prompt, one after another: the worker of each
  disconnect   a chat stream closed by the client after its first chunks
  error-event  a chat stream whose engine dies after the first chunk: the SDK's APIError from the error event
  load         N requests, C at a time: streams read to the end, streams closed after their first chunk, plain
               answers, and requests the client gives up on before their first byte; each answer checked
"""
import asyncio
import json
import sys

import openai

CASE, BASE, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
ARGS = sys.argv[4:]
MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Tell me about prefix caching in one sentence."}]


def emit(**fields):
    print(json.dumps(fields), flush=True)


def client(**kwargs):
    return openai.OpenAI(base_url=BASE + "/v1", api_key="unused", max_retries=0, **kwargs)


def sdk():
    c = client(timeout=60)
    raw = c.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, max_tokens=8)
    chat = raw.parse()
    emit(case="chat", worker=raw.headers.get("x-kvrouter-worker"), text=chat.choices[0].message.content,
         finish_reason=chat.choices[0].finish_reason, prompt_tokens=chat.usage.prompt_tokens,
         completion_tokens=chat.usage.completion_tokens)

    raw = c.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, max_tokens=8, stream=True,
                                                       stream_options={"include_usage": True})
    text, finish, usage, chunks = "", None, None, 0
    for chunk in raw.parse():
        chunks += 1
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    emit(case="chat-stream", worker=raw.headers.get("x-kvrouter-worker"), text=text, finish_reason=finish,
         chunks=chunks, completion_tokens=usage.completion_tokens if usage else None)

    raw = c.completions.with_raw_response.create(model=MODEL, prompt="Once upon a time", max_tokens=6)
    completion = raw.parse()
    emit(case="completion", worker=raw.headers.get("x-kvrouter-worker"), text=completion.choices[0].text,
         finish_reason=completion.choices[0].finish_reason, completion_tokens=completion.usage.completion_tokens)

    raw = c.completions.with_raw_response.create(model=MODEL, prompt="Once upon a time", max_tokens=6, stream=True)
    text, finish, chunks = "", None, 0
    for chunk in raw.parse():
        chunks += 1
        text += chunk.choices[0].text
        finish = chunk.choices[0].finish_reason or finish
    emit(case="completion-stream", worker=raw.headers.get("x-kvrouter-worker"), text=text, finish_reason=finish,
         chunks=chunks)

    try:
        c.chat.completions.create(model="no/such-model", messages=MESSAGES)
        emit(case="unknown-model", error=None)
    except openai.NotFoundError as e:
        emit(case="unknown-model", status=e.status_code, code=e.code, type=e.type)


def prefix():
    count = int(ARGS[0])
    system = " ".join(f"Rule {i}: answer briefly, cite the manual, and never guess about the cache." for i in range(120))
    c = client(timeout=60)
    for i in range(count):
        raw = c.chat.completions.with_raw_response.create(
            model=MODEL, max_tokens=4,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": f"Question number {i}?"}])
        answer = raw.parse()
        emit(case="prefix", worker=raw.headers.get("x-kvrouter-worker"), prompt_tokens=answer.usage.prompt_tokens,
             cached_tokens=(answer.usage.prompt_tokens_details.cached_tokens
                            if answer.usage.prompt_tokens_details else None))


def disconnect():
    c = client(timeout=60)
    raw = c.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, max_tokens=400, stream=True)
    stream = raw.parse()
    seen = 0
    for _ in stream:
        seen += 1
        if seen == 3:
            break
    stream.close()
    emit(case="disconnect", worker=raw.headers.get("x-kvrouter-worker"), chunks=seen)


def error_event():
    c = client(timeout=60)
    raw = c.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, max_tokens=400, stream=True)
    seen = 0
    try:
        for _ in raw.parse():
            seen += 1
            if seen == 2:
                print("first-chunks", file=sys.stderr, flush=True)
                sys.stdin.readline()  # the test kills the engine, then lets us read on
        emit(case="error-event", chunks=seen, error=None)
    except openai.APIError as e:
        emit(case="error-event", chunks=seen, error=str(e), code=(e.body or {}).get("code"),
             worker=raw.headers.get("x-kvrouter-worker"))


async def load():
    total, concurrency = int(ARGS[0]), int(ARGS[1])
    c = openai.AsyncOpenAI(base_url=BASE + "/v1", api_key="unused", max_retries=0, timeout=60)
    gate = asyncio.Semaphore(concurrency)
    outcomes = {"complete": 0, "closed": 0, "plain": 0, "gave_up": 0, "malformed": 0, "errors": 0}
    problems = []

    async def one(i):
        kind = i % 4
        async with gate:
            try:
                messages = [{"role": "user", "content": f"request {i}: say something about routing"}]
                if kind == 0:  # a stream read to its end: one finish reason, text, [DONE]
                    stream = await c.chat.completions.create(model=MODEL, messages=messages, max_tokens=12,
                                                             stream=True)
                    finish = None
                    async for chunk in stream:
                        for choice in chunk.choices:
                            finish = choice.finish_reason or finish
                    outcomes["complete" if finish in ("length", "stop") else "malformed"] += 1
                elif kind == 1:  # a stream the client closes after its first chunk
                    stream = await c.chat.completions.create(model=MODEL, messages=messages, max_tokens=200,
                                                             stream=True)
                    async for _ in stream:
                        break
                    await stream.close()
                    outcomes["closed"] += 1
                elif kind == 2:  # a plain answer
                    answer = await c.completions.create(model=MODEL, prompt=f"request {i}", max_tokens=8)
                    ok = answer.choices and answer.choices[0].finish_reason in ("length", "stop")
                    outcomes["plain" if ok else "malformed"] += 1
                else:  # the client gives up before the first byte
                    try:
                        await c.with_options(timeout=0.005).chat.completions.create(
                            model=MODEL, messages=messages, max_tokens=300)
                        outcomes["plain"] += 1
                    except openai.APITimeoutError:
                        outcomes["gave_up"] += 1
            except openai.APIError as e:
                outcomes["errors"] += 1
                problems.append(f"{i}: {e!r}"[:300])

    await asyncio.gather(*(one(i) for i in range(total)))
    emit(case="load", problems=problems[:5], **outcomes)


{"sdk": sdk, "prefix": prefix, "disconnect": disconnect, "error-event": error_event,
 "load": lambda: asyncio.run(load())}[CASE]()
