#!/usr/bin/env python3
"""Renders chat templates with Python's jinja2 as transformers' apply_chat_template does for vLLM's chat endpoint:
the reference router-tokenizer's ChatTemplate is compared with.

    render_chat_templates.py < cases.json > results.json

Input: {"cases": [{"template": PATH, "special_tokens": {...}, "messages": [...], "add_generation_prompt": bool,
"extra": {...}, "now": "YYYY-MM-DDTHH:MM:SS"}]}. Output: {"results": [{"output": STR, "content_format": "string" |
"openai"} or {"error": STR, "rejected": bool, "content_format": ...}]}.

The environment is transformers' (src/transformers/utils/chat_template_utils.py, _compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols extension and a
{% generation %} block, tojson = json.dumps(ensure_ascii=False, ...), raise_exception raising TemplateError and
strftime_now; render(messages=..., tools=None, documents=None, add_generation_prompt=..., **special_tokens,
**kwargs). Before rendering, messages are normalised as vLLM's chat_utils.parse_chat_messages does for text
content, in the content format vLLM detects from the template's AST (_detect_content_format).
"""

import datetime
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationBlock(jinja2.ext.Extension):
    """transformers' AssistantTracker: {% generation %}...{% endgeneration %}, rendered as its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# --- vLLM's content-format detection, on jinja2's AST -------------------------------------------------------------

def is_access(node, names, key=None):
    """A Name in names (or its `key` item/attribute), possibly under a filter, a test or a slice."""
    if isinstance(node, jinja2.nodes.Filter) and node.node is not None:
        return is_access(node.node, names, key)
    if isinstance(node, jinja2.nodes.Test):
        return is_access(node.node, names, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return is_access(node.node, names, key)
    if key is None:
        return isinstance(node, jinja2.nodes.Name) and node.name in names
    if isinstance(node, jinja2.nodes.Getitem):
        return (isinstance(node.node, jinja2.nodes.Name) and node.node.name in names
                and isinstance(node.arg, jinja2.nodes.Const) and node.arg.value == key)
    if isinstance(node, jinja2.nodes.Getattr):
        return isinstance(node.node, jinja2.nodes.Name) and node.node.name in names and node.attr == key
    return False


def content_format(env, source):
    try:
        root = env.parse(source)
    except Exception:
        return "string"
    lists = {"messages"}
    grew = True
    while grew:
        grew = False
        for assign in root.find_all(jinja2.nodes.Assign):
            if isinstance(assign.target, jinja2.nodes.Name) and assign.target.name not in lists \
                    and is_access(assign.node, lists):
                lists.add(assign.target.name)
                grew = True
    message_vars = {loop.target.name for loop in root.find_all(jinja2.nodes.For)
                    if isinstance(loop.target, jinja2.nodes.Name) and is_access(loop.iter, lists)}
    for loop in root.find_all(jinja2.nodes.For):
        if is_access(loop.iter, message_vars, "content"):
            return "openai"
    return "string"


# --- vLLM's message normalisation (text content) ------------------------------------------------------------------

TEXT_KEYS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal", "thinking": "thinking"}


def normalize(messages, fmt):
    conversation = []
    for message in messages:
        content = message.get("content")
        if content is None:
            parts = []
        elif isinstance(content, str):
            parts = [content]
        else:
            parts = content
        texts = []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
                continue
            key = TEXT_KEYS.get(part.get("type"))
            if key is None:
                raise ValueError(f"unsupported part {part.get('type')}")
            if part.get(key) is not None:
                texts.append(part[key])
        out = {"role": message["role"]}
        out["content"] = [{"type": "text", "text": t} for t in texts] if fmt == "openai" else "\n".join(texts)
        role = message["role"]
        if role == "assistant":
            calls = message.get("tool_calls")
            if calls:
                normalized = []
                for call in calls:
                    call = json.loads(json.dumps(call))
                    args = call["function"].get("arguments")
                    if isinstance(args, str):
                        try:
                            call["function"]["arguments"] = json.loads(args)
                        except json.JSONDecodeError:
                            call["function"]["arguments"] = {}
                    elif not isinstance(args, (dict, list)):
                        call["function"]["arguments"] = {}
                    normalized.append(call)
                out["tool_calls"] = normalized
            if message.get("reasoning") is not None:
                out["reasoning"] = message["reasoning"]
                out["reasoning_content"] = message["reasoning"]
        elif role == "tool":
            if "tool_call_id" in message:
                out["tool_call_id"] = message["tool_call_id"]
            if isinstance(out["content"], list):
                out["content"] = "\n".join(texts)
        if isinstance(message.get("name"), str):
            out["name"] = message["name"]
        conversation.append(out)
    return conversation


def render(case):
    now = datetime.datetime.fromisoformat(case.get("now", "2024-07-26T10:00:00"))
    env = environment(now)
    with open(case["template"], encoding="utf-8") as f:
        source = f.read()
    fmt = content_format(env, source)
    result = {"content_format": fmt}
    try:
        template = env.from_string(source)
        context = dict(case.get("special_tokens", {}))
        context.update(messages=normalize(case["messages"], fmt), tools=None, documents=None,
                       add_generation_prompt=case.get("add_generation_prompt", True))
        context.update(case.get("extra", {}))
        result["output"] = template.render(**context)
    except jinja2.exceptions.TemplateError as e:
        # TemplateError itself is raise_exception's; its subclasses (syntax, undefined, security) are failures
        result["error"] = str(e)
        result["rejected"] = type(e) is jinja2.exceptions.TemplateError
    except Exception as e:  # the template failing in Python too (a TypeError in a filter, ...)
        result["error"] = f"{type(e).__name__}: {e}"
        result["rejected"] = False
    return result


def main():
    request = json.load(sys.stdin)
    json.dump({"results": [render(case) for case in request["cases"]]}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
