"""Parses an engine's /metrics with Prometheus's own text parser (prometheus_client.parser) and prints, as JSON,
each family's type and samples: {family: {"type": ..., "samples": [[name, labels, value], ...]}}.

Usage: metrics_families.py METRICS_URL
"""
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
    content_type = response.headers.get("Content-Type", "")
    text = response.read().decode("utf-8")
families = {}
for family in text_string_to_metric_families(text):
    families[family.name] = {
        "type": family.type,
        "samples": [[s.name, dict(s.labels), s.value] for s in family.samples],
    }
print(json.dumps({"content_type": content_type, "families": families}))
