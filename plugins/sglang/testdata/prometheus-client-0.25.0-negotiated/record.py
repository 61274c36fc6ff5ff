#!/usr/bin/env python3
"""Records how SGLang's /metrics answers, with the real prometheus_client (pure Python, no install needed):

    git --git-dir CLIENT_PYTHON.git archive v0.25.0 | tar x -C /tmp/pc
    PYTHONPATH=/tmp/pc python3 record.py        # in this folder

An SGLang-like registry (names, help texts, label names and default buckets of sgl-project/sglang
python/sglang/srt/metrics/collector.py @ 00ae9c1590d2d0bb6c0bfff39e312c34ae3dd538: a subset of
SchedulerMetricsCollector's gauges, TokenizerMetricsCollector's counters and histograms; values made up)
written in every form SGLang's /metrics can take. SGLang mounts make_asgi_app(), which picks the form by
prometheus_client.exposition.choose_encoder(Accept):
  page.prom              text 0.0.4 (generate_latest), what an Accept without OpenMetrics gets
  page.om-<escaping>     OpenMetrics 1.0.0, one per escaping scheme choose_encoder knows
  page.text-<escaping>   text 1.0.0 under an escaping, where it differs from page.prom
  page.before-first-request
                         text 0.0.4 of the same metrics before any is given a value: SGLang creates them
                         with label names and sets a child (.labels(...)) only when it first logs or observes
  negotiation.json       Accept header -> the content type choose_encoder answers and which page it writes,
                         for the headers below (the test's server, a port of choose_encoder, is held to it)
"""
import json
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import exposition as tx
from prometheus_client.openmetrics import exposition as om

MODEL = 'meta-llama/Llama-3.1-8B-Instruct'
SCHED = {'engine_type': 'unified', 'model_name': MODEL, 'moe_ep_rank': '0', 'pp_rank': '0', 'tp_rank': '0'}
TOK = {'model_name': MODEL}

def registry(fill):
    """The metrics as SGLang declares them; fill: each given a value (else declared only, as before a first request)."""
    r = CollectorRegistry()
    # SchedulerMetricsCollector's gauges (multiprocess_mode="mostrecent" only matters under PROMETHEUS_MULTIPROC_DIR),
    # TokenizerMetricsCollector's counters: declared with _total, as SGLang does
    for kind, labels, name, doc, v in [
        (Gauge, SCHED, 'sglang:num_running_reqs', 'The number of running requests.', 23),
        (Gauge, SCHED, 'sglang:num_used_tokens', 'The number of used tokens.', 41872),
        (Gauge, SCHED, 'sglang:token_usage', 'The token usage.', 0.09),
        (Gauge, SCHED, 'sglang:gen_throughput', 'The generation throughput (token/s).', 1893.25),
        (Gauge, SCHED, 'sglang:num_queue_reqs', 'The number of requests in the waiting queue.', 4),
        (Gauge, SCHED, 'sglang:cache_hit_rate', 'The prefix cache hit rate.', 0.3125),
        (Counter, TOK, 'sglang:prompt_tokens_total', 'Number of prefill tokens processed.', 725596),
        (Counter, TOK, 'sglang:generation_tokens_total', 'Number of generation tokens processed.', 401288),
        (Counter, TOK, 'sglang:cached_tokens_total', 'Number of cached prompt tokens.', 226750),
        (Counter, TOK, 'sglang:num_requests_total', 'Number of requests processed.', 1520),
    ]:
        m = kind(name, doc, list(labels), registry=r)
        if fill and kind is Gauge:
            m.labels(**labels).set(v)
        elif fill:
            m.labels(**labels).inc(v)
    for name, doc, buckets, obs in [
        ('sglang:time_to_first_token_seconds', 'Histogram of time to first token in seconds.',
         [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400], [0.05, 0.15, 0.3, 0.3, 0.7, 1.5, 3.0]),
        ('sglang:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.',
         [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
          0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000], [0.009, 0.011, 0.012, 0.014, 0.018, 0.031, 0.05]),
        ('sglang:e2e_request_latency_seconds', 'Histogram of End-to-end request latency in seconds',
         [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400], [0.9, 2.5, 3.5, 7.0, 12.0]),
    ]:
        h = Histogram(name, doc, list(TOK), buckets=buckets, registry=r)
        for x in obs if fill else []:
            h.labels(**TOK).observe(x)
    return r


r = registry(True)
open('page.before-first-request', 'wb').write(tx.generate_latest(registry(False)))
pages = {'page.prom': tx.generate_latest(r)}
for esc in (om.UNDERSCORES, om.ALLOWUTF8, om.DOTS, om.VALUES):
    pages[f'page.om-{esc}'] = om.generate_latest(r, escaping=esc)
for esc in (om.UNDERSCORES, om.ALLOWUTF8, om.DOTS, om.VALUES):
    # text 1.0.0 with an escaping: the same bytes as page.prom for these names, or a page of its own
    b = tx.generate_latest(r, escaping=esc)
    if b not in pages.values():
        pages[f'page.text-{esc}'] = b
for f, b in pages.items():
    open(f, 'wb').write(b)

ACCEPTS = [
    # l9gpu before issue 30, and after (escaping=allow-utf-8 in the OpenMetrics entry)
    'application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
    'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
    # Prometheus 2 and Prometheus 3 (scrape.go acceptHeader over config.DefaultScrapeProtocols)
    'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
    'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2',
    # each escaping, spelled with spaces as some clients do; no version; an older version; text only
    'application/openmetrics-text; version=1.0.0; escaping=underscores',
    'application/openmetrics-text; version=1.0.0; escaping=dots',
    'application/openmetrics-text; version=1.0.0; escaping=values',
    'application/openmetrics-text; version=1.0.0; escaping=no-such-scheme',
    'application/openmetrics-text',
    'application/openmetrics-text;version=0.0.1,text/plain;version=0.0.4',
    'text/plain;version=1.0.0;escaping=allow-utf-8',
    'text/plain;version=1.0.0;escaping=dots',
    'text/plain;version=0.0.4',
    '*/*',
    '',
]
neg = []
for a in ACCEPTS:
    enc, ctype = tx.choose_encoder(a)
    body = enc(r)
    page = next((f for f, b in pages.items() if b == body), None)
    assert page, f'{a!r}: a page not recorded'
    neg.append({'accept': a, 'contentType': ctype, 'page': page})
json.dump(neg, open('negotiation.json', 'w'), indent=1)
print('\n'.join(f"{n['page']:22} {n['contentType']:75} <- {n['accept']}" for n in neg))
