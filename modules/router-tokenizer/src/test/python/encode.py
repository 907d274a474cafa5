#!/usr/bin/env python3
"""Encodes texts with HuggingFace's Python `tokenizers` (the reference router-tokenizer's DJL encoding is compared
with): {"tokenizer": PATH, "texts": [...], "add_special_tokens": bool} on stdin, {"ids": [[...], ...]} on stdout."""

import json
import sys

from tokenizers import Tokenizer

request = json.load(sys.stdin)
tokenizer = Tokenizer.from_file(request["tokenizer"])
ids = [tokenizer.encode(text, add_special_tokens=request["add_special_tokens"]).ids for text in request["texts"]]
json.dump({"ids": ids}, sys.stdout)
