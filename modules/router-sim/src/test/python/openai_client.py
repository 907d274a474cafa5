"""The simulated engine through the official OpenAI Python SDK: what a client of vLLM sees.

Usage: openai_client.py BASE_URL MODEL MAX_MODEL_LEN BLOCK_SIZE [chat]
With "chat" the engine has a tokenizer (the repository's kvrouter-tiny), and chat completions are checked too; without it, chat must
answer 400 naming --tokenizer. Prints "ok: ..." per check; exits non-zero on the first failure.
"""
import sys

import openai

base_url, model, max_model_len, block_size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
has_tokenizer = len(sys.argv) > 5 and sys.argv[5] == "chat"
client = openai.OpenAI(base_url=base_url + "/v1", api_key="unused", max_retries=0, timeout=60)


def check(condition, message):
    if not condition:
        print("FAILED: " + message, flush=True)
        sys.exit(1)


prompt = list(range(1000, 1064))  # 64 tokens: 4 blocks of 16, the last one not cacheable (one token is computed)
fixed = {"ignore_eos": True, "min_tokens": 12}

models = client.models.list()
check([m.id for m in models.data] == [model], f"models: {models}")
print("ok: models", flush=True)

first = client.completions.create(model=model, prompt=prompt, max_tokens=12, extra_body=fixed)
check(len(first.choices) == 1 and first.choices[0].finish_reason == "length", f"choices {first.choices}")
check(first.usage.prompt_tokens == 64 and first.usage.completion_tokens == 12 and first.usage.total_tokens == 76,
      f"usage {first.usage}")
check(first.usage.prompt_tokens_details.cached_tokens == 0, f"first call cached {first.usage}")
if not has_tokenizer:  # without a tokenizer, output id N reads " N": one word per token
    check(len(first.choices[0].text.split()) == 12, f"text {first.choices[0].text!r}")
print("ok: completion, token-id prompt, fixed output length", flush=True)

again = client.completions.create(model=model, prompt=prompt, max_tokens=12, extra_body=fixed)
expected_cached = (64 - 1) // block_size * block_size
check(again.usage.prompt_tokens_details.cached_tokens == expected_cached, f"repeated prompt cached {again.usage}")
check(again.choices[0].text == first.choices[0].text, "deterministic output for the same prompt")
print("ok: repeated prompt served from the prefix cache", flush=True)

stream = client.completions.create(model=model, prompt=prompt, max_tokens=12, stream=True,
                                   stream_options={"include_usage": True}, extra_body=fixed)
text, finish, usage, chunks = "", None, None, 0
for chunk in stream:
    chunks += 1
    if chunk.choices:
        text += chunk.choices[0].text
        finish = chunk.choices[0].finish_reason or finish
    if chunk.usage is not None:
        check(not chunk.choices, "the usage chunk has no choices")
        usage = chunk.usage
check(text == first.choices[0].text and finish == "length", f"streamed {text!r} {finish}")
check(chunks >= 2 and usage is not None and usage.completion_tokens == 12, f"{chunks} chunks, usage {usage}")
check(usage.prompt_tokens_details.cached_tokens == expected_cached, f"stream usage {usage}")
print("ok: streamed completion with a final usage chunk", flush=True)

natural = client.completions.create(model=model, prompt=[5, 6, 7], max_tokens=4000)
check(natural.choices[0].finish_reason in ("stop", "length"), f"natural {natural.choices[0]}")
check(natural.usage.completion_tokens <= 4000, f"natural usage {natural.usage}")
print("ok: output without ignore_eos ends by itself", flush=True)

both = client.completions.create(model=model, prompt=[[1, 2, 3], [4, 5, 6, 7]], max_tokens=3,
                                extra_body={"ignore_eos": True})
check(sorted(c.index for c in both.choices) == [0, 1], f"two prompts {both.choices}")
check(both.usage.prompt_tokens == 7 and both.usage.completion_tokens == 6, f"two prompts usage {both.usage}")
print("ok: a list of token-id prompts", flush=True)

for bad, status in ((dict(prompt=prompt, max_tokens=0), 400),
                    (dict(prompt=list(range(max_model_len + 1)), max_tokens=1), 400),
                    (dict(prompt=[], max_tokens=1), 400)):
    try:
        client.completions.create(model=model, **bad)
        check(False, f"accepted {list(bad)}")
    except openai.APIStatusError as e:
        check(e.status_code == status and e.body.get("code") == status if isinstance(e.body, dict) else False,
              f"status {e.status_code} body {e.body}")
try:
    client.completions.create(model="no/such-model", prompt=prompt, max_tokens=1)
    check(False, "accepted an unknown model")
except openai.NotFoundError as e:
    check("does not exist" in str(e), str(e))
print("ok: bad requests answer vLLM's errors", flush=True)

messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say something."}]
if not has_tokenizer:
    try:
        client.chat.completions.create(model=model, messages=messages, max_tokens=4)
        check(False, "chat accepted without a tokenizer")
    except openai.BadRequestError as e:
        check("--tokenizer" in str(e), str(e))
    print("ok: chat without a tokenizer answers 400 naming --tokenizer", flush=True)
else:
    full = client.chat.completions.create(model=model, messages=messages, max_tokens=10, extra_body=fixed | {"min_tokens": 10})
    check(full.choices[0].message.role == "assistant" and full.choices[0].finish_reason == "length", str(full))
    check(full.usage.completion_tokens == 10 and full.usage.prompt_tokens > 0, f"chat usage {full.usage}")
    stream = client.chat.completions.create(model=model, messages=messages, max_tokens=10, stream=True,
                                            stream_options={"include_usage": True}, extra_body=fixed | {"min_tokens": 10})
    roles, content, finish, usage = [], "", None, None
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.role:
                roles.append(choice.delta.role)
            content += choice.delta.content or ""
            finish = choice.finish_reason or finish
        if chunk.usage is not None:
            usage = chunk.usage
    check(roles == ["assistant"] and content == full.choices[0].message.content and finish == "length",
          f"streamed chat {roles} {content!r} {finish}")
    check(usage is not None and usage.completion_tokens == 10, f"streamed chat usage {usage}")
    check(usage.prompt_tokens_details.cached_tokens > 0, f"repeated chat prompt cached {usage}")
    print("ok: chat, streaming and not", flush=True)
print("all ok", flush=True)
