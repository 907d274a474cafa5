#!/usr/bin/env python3
"""Generates models/kvrouter-tiny: the small tokenizer kvrouter ships for its tests, simulated engines and a real
engine loaded with random weights.

    generate_tiny.py [--out DIR]        tokenizer.json, tokenizer_config.json, special_tokens_map.json, config.json,
                                        generation_config.json into DIR (default: models/kvrouter-tiny)
    generate_tiny.py --refresh-corpus   rebuilds models/kvrouter-tiny/corpus.txt from the repository's READMEs
    generate_tiny.py --weights DIR      the files above plus random model.safetensors (needs torch and safetensors,
                                        which requirements-test.txt does not install), for a real engine to load

The tokenizer is a byte-level BPE trained with HuggingFace `tokenizers` on corpus.txt (committed, so the output does
not change when a README does). Training is deterministic: the same corpus and `tokenizers` version give the same
files byte for byte, which router-tokenizer's tests check against the committed ones.
"""

import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "models" / "kvrouter-tiny"
CORPUS = DEFAULT_OUT / "corpus.txt"

VOCAB_SIZE = 4096
BOS = "<|begin_of_text|>"
EOS = "<|end_of_text|>"
START_HEADER = "<|start_header_id|>"
END_HEADER = "<|end_header_id|>"
EOT = "<|eot_id|>"
SPECIAL_TOKENS = [BOS, EOS, START_HEADER, END_HEADER, EOT]

# A Llama-3-style chat template (BOS, a header per turn, <|eot_id|> after each), written for this model: it accepts
# content as a string or as a list of text parts, and renders tools as JSON in the first system turn.
CHAT_TEMPLATE = (
    "{{- bos_token }}\n"
    "{%- if tools is defined and tools %}\n"
    "    {{- '<|start_header_id|>system<|end_header_id|>\\n\\nTools:\\n' }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- tool | tojson }}\n"
    "        {{- '\\n' }}\n"
    "    {%- endfor %}\n"
    "    {{- '<|eot_id|>' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}\n"
    "    {%- if message['content'] is string %}\n"
    "        {{- message['content'] | trim }}\n"
    "    {%- else %}\n"
    "        {%- for part in message['content'] %}\n"
    "            {%- if part['type'] == 'text' %}\n"
    "                {{- part['text'] | trim }}\n"
    "            {%- endif %}\n"
    "        {%- endfor %}\n"
    "    {%- endif %}\n"
    "    {{- '<|eot_id|>' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    "{%- endif %}\n"
)


def refresh_corpus():
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*README.md"], check=True, capture_output=True,
                            text=True).stdout.split()
    texts = [(ROOT / path).read_text(encoding="utf-8") for path in sorted(listed)]
    CORPUS.write_text("\n\n".join(texts), encoding="utf-8")
    print(f"{CORPUS}: {len(listed)} READMEs, {CORPUS.stat().st_size} bytes")


def train_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    text = CORPUS.read_text(encoding="utf-8")
    # one paragraph per training item; the order is the file's, so training is reproducible
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    tokenizer.train_from_iterator(paragraphs, trainer=trainer, length=len(paragraphs))
    bos_id = tokenizer.token_to_id(BOS)
    # Llama 3's way of adding BOS: the post-processor, so add_special_tokens=True prepends it and False does not
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B:1", special_tokens=[(BOS, bos_id)])
    return tokenizer


def tokenizer_config(tokenizer):
    added = {}
    for token in SPECIAL_TOKENS:
        added[str(tokenizer.token_to_id(token))] = {
            "content": token, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
            "special": True}
    return {
        "added_tokens_decoder": added,
        "bos_token": BOS,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": EOT,
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 8192,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def model_config(tokenizer):
    # a tiny Llama: 2 layers, hidden 64, 2 heads of 32 (a head size every attention backend supports)
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": tokenizer.token_to_id(BOS),
        "eos_token_id": [tokenizer.token_to_id(EOS), tokenizer.token_to_id(EOT)],
        "head_dim": 32,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 128,
        "max_position_embeddings": 8192,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": tokenizer.get_vocab_size(),
    }


def write_json(path, value):
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def generate(out):
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer()
    tokenizer.save(str(out / "tokenizer.json"), pretty=True)
    write_json(out / "tokenizer_config.json", tokenizer_config(tokenizer))
    write_json(out / "special_tokens_map.json", {"bos_token": BOS, "eos_token": EOT})
    config = model_config(tokenizer)
    write_json(out / "config.json", config)
    write_json(out / "generation_config.json", {
        "bos_token_id": config["bos_token_id"], "eos_token_id": config["eos_token_id"], "do_sample": False})
    return config


def write_random_weights(out, config):
    try:
        import torch
        from safetensors.torch import save_file
    except ImportError as e:
        sys.exit(f"--weights needs torch and safetensors ({e}); install them, e.g. pip install torch safetensors")
    generator = torch.Generator().manual_seed(1337)
    hidden, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    heads, kv_heads, head_dim = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    std = config["initializer_range"]

    def normal(*shape):
        return (torch.randn(*shape, generator=generator) * std).contiguous()

    tensors = {"model.embed_tokens.weight": normal(vocab, hidden), "model.norm.weight": torch.ones(hidden),
               "lm_head.weight": normal(vocab, hidden)}
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        tensors[p + "input_layernorm.weight"] = torch.ones(hidden)
        tensors[p + "post_attention_layernorm.weight"] = torch.ones(hidden)
        tensors[p + "self_attn.q_proj.weight"] = normal(heads * head_dim, hidden)
        tensors[p + "self_attn.k_proj.weight"] = normal(kv_heads * head_dim, hidden)
        tensors[p + "self_attn.v_proj.weight"] = normal(kv_heads * head_dim, hidden)
        tensors[p + "self_attn.o_proj.weight"] = normal(hidden, heads * head_dim)
        tensors[p + "mlp.gate_proj.weight"] = normal(inter, hidden)
        tensors[p + "mlp.up_proj.weight"] = normal(inter, hidden)
        tensors[p + "mlp.down_proj.weight"] = normal(hidden, inter)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help="where to write the model files")
    parser.add_argument("--weights", type=pathlib.Path, metavar="DIR",
                        help="write the model files and random weights into DIR (not committed)")
    parser.add_argument("--refresh-corpus", action="store_true", help="rebuild corpus.txt from the READMEs")
    args = parser.parse_args()
    if args.refresh_corpus:
        refresh_corpus()
        return
    out = args.weights if args.weights else args.out
    config = generate(out)
    if args.weights:
        write_random_weights(out, config)
    print(f"{out}: vocab {config['vocab_size']}")


if __name__ == "__main__":
    main()
