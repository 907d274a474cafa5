"""The official OpenAI Python SDK through a real Envoy whose endpoint picker is kvrouter (router-interop's
EnvoyGatewayTest). One JSON line per request on stdout: status, the worker and booking kvrouter named in its response
headers, the answer's text and usage, or the error the SDK raised. No retries: every status is the gateway's own."""
import json
import sys

import openai

MODES = ("route", "disconnect", "one")


def client(base):
    return openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=60)


def headers_of(raw):
    return {"worker": raw.headers.get("x-kvrouter-worker"), "booking": raw.headers.get("x-kvrouter-booking-id"),
            "reason": raw.headers.get("x-kvrouter-reason")}


def chat(c, model, content, stream, extra):
    args = dict(model=model, max_tokens=6, messages=[{"role": "user", "content": content}], extra_headers=extra)
    if not stream:
        raw = c.chat.completions.with_raw_response.create(**args)
        answer = raw.parse()
        return dict(status=raw.status_code, **headers_of(raw), text=answer.choices[0].message.content,
                    finish_reason=answer.choices[0].finish_reason, completion_tokens=answer.usage.completion_tokens)
    with c.chat.completions.with_streaming_response.create(stream=True, stream_options={"include_usage": True},
                                                           **args) as raw:
        text, finish, usage, chunks = "", None, None, 0
        for chunk in raw.parse():
            chunks += 1
            if chunk.usage is not None:
                usage = chunk.usage.completion_tokens
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
        return dict(status=raw.status_code, **headers_of(raw), text=text, finish_reason=finish,
                    completion_tokens=usage, chunks=chunks)


def completion(c, model, prompt, stream, extra):
    args = dict(model=model, max_tokens=5, prompt=prompt, extra_headers=extra)
    if not stream:
        raw = c.completions.with_raw_response.create(**args)
        answer = raw.parse()
        return dict(status=raw.status_code, **headers_of(raw), text=answer.choices[0].text,
                    finish_reason=answer.choices[0].finish_reason, completion_tokens=answer.usage.completion_tokens)
    with c.completions.with_streaming_response.create(stream=True, **args) as raw:
        text, finish = "", None
        for chunk in raw.parse():
            for choice in chunk.choices:
                text += choice.text or ""
                finish = choice.finish_reason or finish
        return dict(status=raw.status_code, **headers_of(raw), text=text, finish_reason=finish)


def attempt(case, call):
    try:
        result = call()
    except openai.APIStatusError as e:
        body = e.response.text
        try:
            code = e.response.json().get("error", {}).get("code")
        except ValueError:
            code = None
        result = dict(status=e.status_code, **headers_of(e.response), error=body[:300], code=code)
    except openai.APIConnectionError as e:
        result = dict(status=0, error=repr(e))
    print(json.dumps(dict(case=case, **result)), flush=True)


def main():
    mode, base, model = sys.argv[1], sys.argv[2], sys.argv[3]
    c = client(base)
    extra = {}
    if mode == "route":
        # route BASE MODEL N [SUBSET]: N requests through the gateway, chat and completions, streamed and not
        count = int(sys.argv[4])
        if len(sys.argv) > 5:
            extra["x-gateway-destination-endpoint-subset"] = sys.argv[5]
        calls = [("chat-stream", lambda i: chat(c, model, f"Hello {i}!", True, extra)),
                 ("chat", lambda i: chat(c, model, f"Hi there {i}", False, extra)),
                 ("completion-stream", lambda i: completion(c, model, f"Once upon a time {i}", True, extra)),
                 ("completion", lambda i: completion(c, model, f"The answer {i} is", False, extra))]
        for i in range(count):
            case, call = calls[i % len(calls)]
            attempt(case, lambda: call(i))
    elif mode == "one":
        # one BASE MODEL [HEADER VALUE]: a single chat completion (with one extra request header), whatever status
        # the gateway answers
        if len(sys.argv) > 5:
            extra[sys.argv[4]] = sys.argv[5]
        attempt("one", lambda: chat(c, model, "Just one", False, extra))
    elif mode == "disconnect":
        # disconnect BASE MODEL: stream, read the first chunk, wait for a line on stdin, then go away mid-stream
        with c.chat.completions.with_streaming_response.create(
                model=model, max_tokens=2000, stream=True,
                messages=[{"role": "user", "content": "Tell me a very long story"}]) as raw:
            stream = raw.parse()
            first = next(iter(stream))
            print("first-chunk " + json.dumps(headers_of(raw)), file=sys.stderr, flush=True)
            sys.stdin.readline()
            result = dict(status=raw.status_code, **headers_of(raw), first_id=first.id)
        c.close()  # the connection goes with the client: Envoy resets the stream to kvrouter
        print(json.dumps(dict(case="disconnect", **result)), flush=True)
    else:
        raise SystemExit(f"mode must be one of {MODES}")


if __name__ == "__main__":
    main()
