#!/usr/bin/env python3
"""Records the /metrics pages the router-engines tests parse: each engine's metrics declared with prometheus_client
exactly as the engine's source declares them (names, documentation, label names, types), set to known values, and
written with prometheus_client's text exposition, as the engine serves it.

  vLLM:   vllm/v1/metrics/loggers.py (PrometheusStatLogger: per-engine gauges and counters, labels model_name and
          engine; log_metrics_info: vllm:cache_config_info with every CacheConfig field as a label, plus engine)
  SGLang: python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector: labels model_name, engine_type,
          tp_rank, pp_rank, dp_rank; TokenizerMetricsCollector: labels model_name)

Usage (writes into src/test/resources/metrics/): .venv/bin/python record_metrics_pages.py OUT_DIR
"""
import os
import sys

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

MODEL = "org/llama-8b"


def vllm_page(dp_size, block_size, num_gpu_blocks, legacy=False, lora=False):
    registry = CollectorRegistry()
    labels = ["model_name", "engine"]
    running = Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", labels,
                    registry=registry)
    waiting = Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels,
                    registry=registry)
    if legacy:
        usage = Gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", labels,
                      registry=registry)
        queries = Counter("vllm:gpu_prefix_cache_queries",
                          "GPU prefix cache queries, in terms of number of queried blocks.", labels,
                          registry=registry)
        hits = Counter("vllm:gpu_prefix_cache_hits", "GPU prefix cache hits, in terms of number of cached blocks.",
                       labels, registry=registry)
    else:
        usage = Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels,
                      registry=registry)
        queries = Counter("vllm:prefix_cache_queries",
                          "Prefix cache queries, in terms of number of queried tokens.", labels, registry=registry)
        hits = Counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", labels,
                       registry=registry)
    prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", labels, registry=registry)
    ttft = Histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", labels,
                     buckets=[0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                              10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0], registry=registry)
    # CacheConfig.metrics_info(): every field as a string (a representative field set of a v1 release), + engine
    cache_fields = dict(block_size=str(block_size), gpu_memory_utilization="0.9", swap_space="4",
                        cache_dtype="auto", is_attention_free="False", num_gpu_blocks_override="None",
                        sliding_window="None", enable_prefix_caching="True", prefix_caching_hash_algo="sha256",
                        cpu_offload_gb="0", calculate_kv_scales="False", kv_sharing_fast_prefill="False",
                        mamba_page_size_padded="None", num_gpu_blocks=str(num_gpu_blocks), num_cpu_blocks="None")
    info = Gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                 list(cache_fields) + ["engine"], registry=registry)
    for engine in range(dp_size):
        e = str(engine)
        running.labels(MODEL, e).set(3 + engine)
        waiting.labels(MODEL, e).set(1 + 2 * engine)
        usage.labels(MODEL, e).set(0.25 + 0.25 * engine)
        queries.labels(MODEL, e).inc(10_000 + engine)
        hits.labels(MODEL, e).inc(4_000 + engine)
        prompt.labels(MODEL, e).inc(12_345)
        ttft.labels(MODEL, e).observe(0.07)
        info.labels(**cache_fields, engine=e).set(1)
    if lora:
        # PrometheusStatLogger with a lora_config: one series per label set, no engine label, the value the
        # wall-clock time of the update; adapter names joined by "," (running and waiting adapters' keys)
        lora_info = Gauge("vllm:lora_requests_info", "Running stats on lora requests.",
                          ["max_lora", "waiting_lora_adapters", "running_lora_adapters"], registry=registry)
        lora_info.labels(max_lora="4", waiting_lora_adapters="", running_lora_adapters="stale-adapter").set(
            1_700_000_000.0)
        lora_info.labels(max_lora="4", waiting_lora_adapters="chat", running_lora_adapters="sql,summarize").set(
            1_700_000_060.5)
    return generate_latest(registry).decode()


def sglang_page(dp_size, tp_size, max_total_num_tokens):
    registry = CollectorRegistry()
    names = ["model_name", "engine_type", "tp_rank", "pp_rank", "dp_rank"]
    running = Gauge("sglang:num_running_reqs", "The number of running requests.", names, registry=registry)
    used = Gauge("sglang:num_used_tokens", "The number of used tokens.", names, registry=registry)
    usage = Gauge("sglang:token_usage", "The token usage.", names, registry=registry)
    queue = Gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", names, registry=registry)
    hit = Gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", names, registry=registry)
    max_tokens = Gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", names,
                       registry=registry)
    for dp in range(dp_size):
        for tp in range(tp_size):
            values = dict(model_name=MODEL, engine_type="unified", tp_rank=str(tp), pp_rank="0", dp_rank=str(dp))
            # every TP rank of a DP rank reports; only TP rank 0's figures differ here, so a reader taking another
            # one would be caught
            skew = 0 if tp == 0 else 100
            running.labels(**values).set(2 + dp + skew)
            used.labels(**values).set(1000)
            usage.labels(**values).set(0.5 - 0.25 * dp)
            queue.labels(**values).set(4 + dp + skew)
            hit.labels(**values).set(0.4)
            max_tokens.labels(**values).set(max_total_num_tokens)
    tokenizer = ["model_name"]
    prompt = Counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", tokenizer,
                     registry=registry)
    cached = Counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", tokenizer, registry=registry)
    prompt.labels(MODEL).inc(50_000)
    cached.labels(MODEL).inc(20_000)
    return generate_latest(registry).decode()


PAGES = {
    "vllm.prom": ("vllm/v1/metrics/loggers.py", lambda: vllm_page(dp_size=1, block_size=16, num_gpu_blocks=28800)),
    "vllm-dp2.prom": ("vllm/v1/metrics/loggers.py", lambda: vllm_page(dp_size=2, block_size=32, num_gpu_blocks=9000)),
    "vllm-legacy.prom": ("vllm/v1/metrics/loggers.py (before the kv_cache_usage_perc and prefix_cache_* renames)",
                         lambda: vllm_page(dp_size=1, block_size=16, num_gpu_blocks=1000, legacy=True)),
    "vllm-lora.prom": ("vllm/v1/metrics/loggers.py (with --enable-lora: vllm:lora_requests_info)",
                       lambda: vllm_page(dp_size=2, block_size=16, num_gpu_blocks=1000, lora=True)),
    "sglang.prom": ("python/sglang/srt/metrics/collector.py",
                    lambda: sglang_page(dp_size=2, tp_size=2, max_total_num_tokens=400_000)),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (source, page) in PAGES.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(f"# Recorded by record_metrics_pages.py with prometheus_client from the metric definitions in "
                    f"{source}\n")
            f.write(page())


if __name__ == "__main__":
    main()
