#!/usr/bin/env python3
"""Encodes texts with HuggingFace's Python `tokenizers` (the reference router-tokenizer's DJL encoding is compared
with): {"tokenizer": PATH, "texts": [...], "add_special_tokens": bool} on stdin; on stdout {"ids": [[...], ...]},
the ids decoded back with special tokens skipped ("decoded") and the vocabulary size with added tokens."""

import json
import sys

from tokenizers import Tokenizer

request = json.load(sys.stdin)
tokenizer = Tokenizer.from_file(request["tokenizer"])
ids = [tokenizer.encode(text, add_special_tokens=request["add_special_tokens"]).ids for text in request["texts"]]
json.dump({"ids": ids, "decoded": [tokenizer.decode(each, skip_special_tokens=True) for each in ids],
           "vocabulary_size": tokenizer.get_vocab_size(with_added_tokens=True)}, sys.stdout)
